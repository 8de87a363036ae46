/**
 * The ceilings to compare against, on the same machine: a bare Bun.serve hello world (any path
 * not below, e.g. `GET /` or a POST whose body it never reads) and bare routes that read a publish
 * body one way each and answer 201 with a small JSON object (no auth, no storage): the most a
 * publish route can reach in Bun.
 *
 *   POST /bare/json/:channel    `await req.json()`
 *   POST /bare/text/:channel    `JSON.parse(await req.text())`
 *   POST /bare/bytes/:channel   `await req.arrayBuffer()` (not decoded)
 *   POST /bare/head/:channel    the request's URL and the two headers a publish cannot do without
 *                               (Authorization, Content-Type) read, then as /bare/text: what
 *                               Bun charges any route that authenticates before it reads a body
 *   POST /channels/:channel/messages   the same as /bare/json (older bench runs)
 *   GET /bare/sub/:channel      an event stream of the channel's publishes below (held open)
 *   POST /bare/deliver/:channel `JSON.parse(await req.text())`, then the body as one event
 *                               (`id:` and `data:` lines, one write and flush) to each event
 *                               stream of the channel: the I/O of a publish delivered to its
 *                               subscribers (one read, the answer and one write per stream)
 *   GET / with `Upgrade: websocket`   the realtime protocol's publishing, bare: CONNECTED, then
 *                                     each msgpack frame decoded (msgpackr) and the MESSAGEs of a
 *                                     connection answered by one ACK per event-loop turn
 *
 * Listens on PORT (0 = any free port) and prints `listening <port>` once ready. Exits when its
 * parent is gone.
 */
import { Packr } from 'msgpackr'
import { created } from './lib/bare-answer'

const packr = new Packr({ useRecords: false, moreTypes: false })
const MESSAGE = 15
const ACK = 1

/** A bare realtime connection: the msgSerials of the MESSAGEs received this turn. */
interface Bare {
  serials: number[]
  scheduled: boolean
}
let connections = 0

type Req = Request & { params: { channel: string } }
const json = async (req: Req) => created(req.params.channel, ((await req.json()) as { name?: string }).name)

/**
 * The request's head read as an authenticating route must (Bun makes the URL a string and copies
 * every header into a Headers object on first read), then the body as /bare/text: the answer
 * names what was read so that none of it can be optimised away.
 */
async function head(req: Req): Promise<Response> {
  const headers = req.headers
  const seen = req.url.length + (headers.get('authorization')?.length ?? 0) + (headers.get('content-type')?.length ?? 0)
  const name = (JSON.parse(await req.text()) as { name?: string }).name
  return created(req.params.channel, `${name}:${seen}`)
}

/** The event streams open, by channel. */
const streams = new Map<string, Set<ReadableStreamDirectController>>()
let events = 0

/** An event stream of `channel` (a direct stream: each write goes to the socket, as the gateway's do). */
function subscribe(channel: string): Response {
  let held: ReadableStreamDirectController | undefined
  const drop = () => {
    if (held) streams.get(channel)?.delete(held)
  }
  const body = new ReadableStream({
    type: 'direct',
    pull(c: ReadableStreamDirectController) {
      held = c
      let set = streams.get(channel)
      if (!set) streams.set(channel, (set = new Set()))
      set.add(c)
      c.write(':\n\n')
      c.flush()
      return new Promise<void>(() => {})
    },
    cancel: drop,
  } as unknown as UnderlyingDefaultSource<Uint8Array>)
  return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
}

async function deliver(req: Req): Promise<Response> {
  const channel = req.params.channel
  const text = await req.text()
  const name = (JSON.parse(text) as { name?: string }).name
  const set = streams.get(channel)
  if (set) {
    const event = `id: ${++events}\ndata: ${text}\n\n`
    for (const c of set) {
      try {
        c.write(event)
        c.flush()
      } catch {
        set.delete(c) // its client is gone
      }
    }
  }
  return created(channel, name)
}

const server = Bun.serve<Bare>({
  hostname: process.env.HOST ?? '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  idleTimeout: 0,
  routes: {
    '/bare/json/:channel': { POST: json },
    '/bare/text/:channel': {
      POST: async (req: Req) => created(req.params.channel, (JSON.parse(await req.text()) as { name?: string }).name),
    },
    '/bare/bytes/:channel': {
      POST: async (req: Req) => created(req.params.channel, (await req.arrayBuffer()).byteLength),
    },
    '/bare/head/:channel': { POST: head },
    '/channels/:channel/messages': { POST: json },
    '/bare/sub/:channel': { GET: (req: Req) => subscribe(req.params.channel) },
    '/bare/deliver/:channel': { POST: deliver },
  },
  fetch: (req, srv) => {
    if (
      req.headers.get('upgrade')?.toLowerCase() === 'websocket' &&
      srv.upgrade(req, { data: { serials: [], scheduled: false } })
    )
      return undefined
    return new Response('Hello, world!')
  },
  websocket: {
    open(ws) {
      const details = { connectionKey: `bare-${connections}`, maxMessageSize: 65536, maxIdleInterval: 15000 }
      ws.send(packr.pack({ action: 4, connectionId: `bare-${connections++}`, connectionDetails: details }))
    },
    message(ws, frame) {
      const pm = packr.unpack(frame as Buffer) as { action?: number; msgSerial?: number }
      if (pm.action !== MESSAGE || typeof pm.msgSerial !== 'number') return
      const c = ws.data
      c.serials.push(pm.msgSerial)
      if (c.scheduled) return
      c.scheduled = true
      setImmediate(() => {
        c.scheduled = false
        const serials = c.serials.splice(0)
        const res = serials.map((n) => ({ serials: [`0-${n}`] }))
        ws.send(packr.pack({ action: ACK, msgSerial: serials[0], count: serials.length, res }))
      })
    },
  },
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
