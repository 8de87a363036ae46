/**
 * The conformance scorecard made of several runs (conformance/scorecard.ts `mergeSummaries`): a
 * suite run again on its own replaces that suite's results of the earlier run on each backend and
 * keeps the others'; the sources of both runs are named, the earliest start and latest end kept, every gateway named.
 */
import { expect, test } from 'bun:test'
import { mergeSummaries, renderScorecard, type RunSummary } from '../../conformance/scorecard'
import type { FileResult } from '../../conformance/results'

const result = (suite: string, file: string, passed: number, failed = 0): FileResult & { suite: string } => ({
  suite,
  file,
  passed,
  failed,
  skipped: 0,
  notRun: 0,
  byProtocol: { json: { passed: 0, failed: 0 }, msgpack: { passed: 0, failed: 0 } },
  failures: failed ? [{ title: `${file} fails`, error: 'expected 1 to equal 2' }] : [],
  ending: 'ok',
  seconds: 1,
})

const run = (
  date: string,
  gateway: string,
  tree: string,
  suites: string[],
  results: Record<string, Array<FileResult & { suite: string }>>,
): RunSummary => ({
  date,
  gateway,
  trees: { [tree]: { ref: `${tree}-ref`, commit: '0123456789abcdef', client: tree } },
  suites: suites.map((name) => ({ name, what: `the ${name} suite` })),
  backends: Object.entries(results).map(([backend, rs]) => ({ backend, gatewayStarts: 1, results: rs })),
})

test('a later run of one suite takes its place on each backend; the other suites stay', () => {
  const first = run('2026-12-02T07:00:00Z', 'aaa', 'ably-js', ['rest', 'sdk'], {
    embedded: [result('rest', 'a.js', 3), result('sdk', 'b.ts', 1, 1)],
    redis: [result('rest', 'a.js', 3), result('sdk', 'b.ts', 1, 1)],
  })
  const again = run('2026-12-02T08:00:00Z', 'bbb', 'sdk', ['sdk'], {
    embedded: [result('sdk', 'b.ts', 2)],
    redis: [result('sdk', 'b.ts', 2)],
  })
  const merged = mergeSummaries([first, { ...again, started: '2026-12-02T07:40:00Z' }])
  expect(merged.date).toBe('2026-12-02T08:00:00Z')
  // from the first run's start (its end, where its start was not kept) to the last one's end
  expect(merged.started).toBe('2026-12-02T07:00:00Z')
  expect(renderScorecard(merged)).toContain('Run of 2026-12-02 07:00-08:00 UTC')
  expect(renderScorecard({ ...again, started: '2026-12-01T23:50:00Z' })).toContain(
    'Run of 2026-12-01 23:50 - 2026-12-02 08:00 UTC',
  )
  expect(merged.gateway).toBe('aaa` and `bbb')
  expect(Object.keys(merged.trees)).toEqual(['ably-js', 'sdk'])
  expect(merged.suites.map((s) => s.name)).toEqual(['rest', 'sdk'])
  for (const b of merged.backends) {
    expect(b.results.map((r) => [r.suite, r.passed, r.failed])).toEqual([
      ['rest', 3, 0],
      ['sdk', 2, 0],
    ])
    expect(b.gatewayStarts).toBe(2)
  }
  const card = renderScorecard(merged)
  expect(card).toContain('gateway `aaa` and `bbb`')
  expect(card).toContain('| sdk | embedded | 2 | 0 |')
  expect(card).not.toContain('b.ts fails')
  // one run alone is itself
  expect(mergeSummaries([first]).backends).toEqual(first.backends)
})
