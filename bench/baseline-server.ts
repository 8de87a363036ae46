/**
 * The ceilings to compare against, on the same machine: a bare Bun.serve hello world (`GET /`,
 * the baseline) and the most any JSON publish route can reach (`POST
 * /channels/:channel/messages`: read the JSON body, answer 201 with a small JSON object; no auth,
 * no storage). Listens on PORT (0 = any free port) and prints `listening <port>` once ready.
 * Exits when its parent is gone.
 */
const JSON_HEADERS = { 'content-type': 'application/json' }

const server = Bun.serve({
  hostname: process.env.HOST ?? '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  idleTimeout: 0,
  routes: {
    '/channels/:channel/messages': {
      POST: async (req) => {
        const body = (await req.json()) as { name?: string }
        return new Response(JSON.stringify({ channel: req.params.channel, messageId: 'bare:0', serials: [String(body.name)] }), { status: 201, headers: JSON_HEADERS })
      },
    },
  },
  fetch: () => new Response('Hello, world!'),
})
process.stdout.write(`listening ${server.port}\n`)

const parentPid = process.ppid
setInterval(() => { if (process.ppid !== parentPid) process.exit(0) }, 1000).unref()
process.on('SIGTERM', () => { server.stop(true); process.exit(0) })
export {}
