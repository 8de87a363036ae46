/**
 * A mocha reporter for the conformance runner: one JSON line per event, appended to the file named by
 * CONFORMANCE_RESULTS as it happens (a file cut by its wall limit still leaves what it ran), and a
 * short spec-like line per test on stdout for the run's log.
 */
'use strict'
const fs = require('fs')

module.exports = function ConformanceReporter(runner) {
  const out = process.env.CONFORMANCE_RESULTS
  const write = (o) => {
    if (out) fs.appendFileSync(out, JSON.stringify(o) + '\n')
  }
  const message = (err) => String((err && (err.message || err)) || '').slice(0, 600)
  runner.on('start', () => write({ event: 'start', total: runner.total }))
  runner.on('pass', (t) => {
    write({ event: 'pass', title: t.fullTitle(), ms: t.duration })
    process.stdout.write(`  ok    ${t.fullTitle()} (${t.duration} ms)\n`)
  })
  runner.on('fail', (t, err) => {
    // a failed hook ("before all") fails the tests it guards: they are counted as not run
    write({ event: 'fail', hook: t.type === 'hook', title: t.fullTitle(), error: message(err) })
    process.stdout.write(`  FAIL  ${t.fullTitle()}: ${message(err).split('\n')[0]}\n`)
  })
  runner.on('pending', (t) => write({ event: 'pending', title: t.fullTitle() }))
  runner.on('end', () => write({ event: 'end' }))
}
