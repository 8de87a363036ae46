/**
 * The realtime side of the in-process benches (realtime-publish-cost.ts, publish-allocations.ts):
 * a node's `realtime()` WebSocket handlers driven over sockets of this file, which count the
 * messages ACKed to them, and the msgpack MESSAGE frames of `bench/run.ts realtime-publish`
 * (100-byte data, 100 channels).
 */
import { join } from 'node:path'
import { Packr } from 'msgpackr'
import { BENCH_KEY } from './targets'
import { inProcessNode } from './in-process-node'

const packr = new Packr({ useRecords: false })
const unpackr = new Packr({ useRecords: false, mapsAsObjects: true })

export interface Handlers {
  open(ws: FakeSocket): void
  message(ws: FakeSocket, frame: ArrayBuffer): void
}

/** What `SocketTransport` uses of Bun's ServerWebSocket; counts the ACKed messages it is sent. */
export class FakeSocket {
  readyState = 1
  binaryType = 'nodebuffer'
  acked = 0
  connected = false
  nextSerial = 0
  constructor(readonly data: object) {}
  send(frame: Uint8Array | string): number {
    const pm = unpackr.unpack(frame as Uint8Array) as { action: number; count?: number; error?: unknown }
    if (pm.action === 4) this.connected = true
    else if (pm.action === 1) this.acked += pm.count!
    else if (pm.action === 2 || pm.action === 9) throw new Error(`refused: ${JSON.stringify(pm)}`)
    return 1
  }
  getBufferedAmount = () => 0
  close() {}
  terminate() {}
  ping() {}
}

/** The realtime handlers of a node of the checkout at `root` (`env` over its settings), with `connections` sockets connected (msgpack). */
export async function realtimeNode(
  root: string,
  connections: number,
  rateLimits = false,
  env: Record<string, string> = {},
): Promise<{ handlers: Handlers; sockets: FakeSocket[] }> {
  const { realtime, connectParams } = await import(join(root, 'src/api/realtime/index.ts'))
  const { config, node } = await inProcessNode(root, rateLimits, env)
  const rt = realtime(node.core, config, node.log)
  const url = new URL(`http://127.0.0.1/?key=${encodeURIComponent(BENCH_KEY)}&format=msgpack&heartbeats=false&v=6`)
  const sockets = Array.from({ length: connections }, () => {
    const { format, ...params } = connectParams(url, new Request(url))
    return new FakeSocket({ params, format })
  })
  for (const ws of sockets) rt.websocket.open(ws)
  while (!sockets.every((ws) => ws.connected)) await Bun.sleep(5)
  return { handlers: rt.websocket, sockets }
}

let n = 0
/** The next MESSAGE frame of `ws` (its next msgSerial, the next of 100 channels). */
export function messageFrame(ws: FakeSocket): ArrayBuffer {
  const bytes = packr.pack({
    action: 15,
    channel: `bench-${n++ % 100}`,
    msgSerial: ws.nextSerial++,
    messages: [{ name: 'bench', data: 'x'.repeat(74) }],
  })
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
}

/** A turn of the event loop (the ACKs of a turn go out on the next). */
export const turn = () => new Promise<void>((r) => setImmediate(r))
