/**
 * The event streams of `scale.sh` (SUBS): N streams, stream i on channel `bench-i`, held by P
 * processes on raw sockets (a GET written by hand, the `data:` lines counted as they come: one per
 * message delivered). Each process writes `<deliveries> <open> <failed>` to `<file>.<k>` whenever
 * it gets SIGUSR1, so scale.sh reads the deliveries of its measured window without stopping them.
 *
 * Bundled by pack.sh (`streams.js`) and run by the compiled gateway as Bun (BUN_BE_BUN=1):
 * `streams.js <port> <path with {n}> <N> <P> <file>`, e.g. path `/sub/bench-{n}` (nchan) or
 * `/sse?v=1.2&key=...&channels=bench-{n}` (the gateway).
 */
import { writeFileSync } from 'node:fs'
import { countDataLines } from '../lib/data-lines'

const [port, path, streams = '1000', procs = '2', file, role] = process.argv.slice(2)
if (!port || !path || !file) throw new Error('usage: streams.js <port> <path with {n}> <streams> <processes> <file>')

if (role === undefined) {
  // the parent: P children, each its share of the streams; it ends them when it is ended
  const children = Array.from({ length: Number(procs) }, (_, k) =>
    Bun.spawn([process.execPath, process.argv[1]!, port, path, streams, procs, file, String(k)], {
      env: process.env,
      stdout: 'inherit',
      stderr: 'inherit',
    }),
  )
  const stop = () => {
    for (const c of children) c.kill()
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  process.on('SIGUSR1', () => children.forEach((c) => c.kill('SIGUSR1')))
  await Promise.all(children.map((c) => c.exited))
  process.exit(0)
}

const k = Number(role)
let deliveries = 0
let open = 0
let failed = 0
process.on('SIGUSR1', () => writeFileSync(`${file}.${k}`, `${deliveries} ${open} ${failed}\n`))
for (let i = k; i < Number(streams); i += Number(procs)) {
  let tail: Buffer = Buffer.from('\n')
  let answered = false
  let ok = false
  await Bun.connect({
    hostname: '127.0.0.1',
    port: Number(port),
    socket: {
      open(s) {
        s.write(
          `GET ${path.replace('{n}', String(i))} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`,
        )
      },
      data(_s, chunk) {
        if (!answered) {
          answered = true
          const status = chunk.subarray(0, chunk.indexOf(13)).toString()
          ok = status.startsWith('HTTP/1.1 200')
          if (ok) open++
          else if (failed++ === 0) console.error(`stream ${i}: ${status}`)
        }
        const [n, t] = countDataLines(chunk, tail)
        deliveries += n
        tail = t
      },
      close() {
        // a stream that was open ends (one refused was counted as failed when answered)
        if (ok) {
          open--
          failed++
        } else if (!answered) failed++
      },
      error() {},
    },
  }).catch(() => failed++)
}
setInterval(() => {}, 1 << 30)
