/**
 * The ceilings to compare against, on the same machine: a bare Bun.serve hello world (any path
 * not below, e.g. `GET /` or a POST whose body it never reads) and bare routes that read a publish
 * body one way each and answer 201 with a small JSON object (no auth, no storage): the most a
 * publish route can reach in Bun.
 *
 *   POST /bare/json/:channel    `await req.json()`
 *   POST /bare/text/:channel    `JSON.parse(await req.text())`
 *   POST /bare/bytes/:channel   `await req.arrayBuffer()` (not decoded)
 *   POST /channels/:channel/messages   the same as /bare/json (older bench runs)
 *
 * Listens on PORT (0 = any free port) and prints `listening <port>` once ready. Exits when its
 * parent is gone.
 */
const JSON_HEADERS = { 'content-type': 'application/json' }

const created = (channel: string, name: unknown) =>
  new Response(JSON.stringify({ channel, messageId: 'bare:0', serials: [String(name)] }), {
    status: 201,
    headers: JSON_HEADERS,
  })

type Req = Request & { params: { channel: string } }
const json = async (req: Req) => created(req.params.channel, ((await req.json()) as { name?: string }).name)

const server = Bun.serve({
  hostname: process.env.HOST ?? '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  idleTimeout: 0,
  routes: {
    '/bare/json/:channel': { POST: json },
    '/bare/text/:channel': {
      POST: async (req) => created(req.params.channel, (JSON.parse(await req.text()) as { name?: string }).name),
    },
    '/bare/bytes/:channel': {
      POST: async (req) => created(req.params.channel, (await req.arrayBuffer()).byteLength),
    },
    '/channels/:channel/messages': { POST: json },
  },
  fetch: () => new Response('Hello, world!'),
})
process.stdout.write(`listening ${server.port}\n`)

const parentPid = process.ppid
setInterval(() => {
  if (process.ppid !== parentPid) process.exit(0)
}, 1000).unref()
process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
export {}
