/**
 * The ceiling to compare against: a bare Bun.serve hello world on the same machine. Listens on
 * PORT (0 = any free port) and prints `listening <port>` once ready. Exits when its parent is gone.
 */
const server = Bun.serve({
  hostname: process.env.HOST ?? '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  idleTimeout: 0,
  fetch: () => new Response('Hello, world!'),
})
process.stdout.write(`listening ${server.port}\n`)

const parentPid = process.ppid
setInterval(() => { if (process.ppid !== parentPid) process.exit(0) }, 1000).unref()
process.on('SIGTERM', () => { server.stop(true); process.exit(0) })
export {}
