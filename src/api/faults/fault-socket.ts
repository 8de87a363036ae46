import type { ServerWebSocket } from 'bun'
import type { DeliveryFilter, Message, Transport } from '../../core/connections'
import {
  encodeFrame,
  encodeServerMessage,
  writeBatch,
  type ClientFrame,
  type Format,
  type Frame,
} from '../realtime/frames'
import type { SocketData, SocketTap } from '../realtime/socket'
import { decodeFrameForLog, frameBytes } from './protocol'
import type { Rule } from './rules'
import type { Session } from './session'

type AnyFrame = Frame | ClientFrame
type Direction = 'client_to_server' | 'server_to_client'

/** A frame held back by a `delay`: what to write when it is due. */
interface Held {
  ms: number
  write: () => void
}

/**
 * The frames of one direction of a socket, passed through the session's rules one at a time in
 * order: while a `delay` holds a frame, the frames after it wait behind it (as they would behind a
 * proxy that sleeps before forwarding), and count as buffered bytes of the connection.
 */
class Pipe {
  private queue: AnyFrame[] = []
  private held = false
  private idle: Array<() => void> = []
  bytes = 0

  constructor(
    private readonly socket: FaultSocket,
    private readonly pass: (frame: AnyFrame) => Held | void,
  ) {}

  push(frame: AnyFrame): void {
    if (this.held || this.queue.length) {
      this.queue.push(frame)
      this.bytes += frameBytes(frame)
      return
    }
    this.run(frame)
  }

  /** Calls `fn` once nothing is held or queued (at once when that is now). */
  whenIdle(fn: () => void): void {
    if (!this.held && !this.queue.length) fn()
    else this.idle.push(fn)
  }

  private run(frame: AnyFrame): void {
    const held = this.pass(frame)
    if (!held) return
    this.held = true
    this.socket.later(held.ms, () => {
      this.held = false
      held.write()
      this.drain()
    })
  }

  private drain(): void {
    while (!this.held && this.queue.length) {
      const frame = this.queue.shift()!
      this.bytes -= frameBytes(frame)
      if (this.socket.ended) continue
      this.run(frame)
    }
    if (!this.held && !this.queue.length) for (const fn of this.idle.splice(0)) fn()
  }

  /** The socket is gone: nothing is written any more, waiters are let go. */
  clear(): void {
    this.queue = []
    this.bytes = 0
    for (const fn of this.idle.splice(0)) fn()
  }
}

/**
 * One WebSocket of a fault session's port: the session's rules applied to its frames both ways,
 * its temporal triggers, and the proxy's own actions on it (close, cut, inject). The node's
 * realtime adapter serves the socket as any other; only the frames pass through here.
 */
export class FaultSocket implements SocketTap {
  ws?: ServerWebSocket<SocketData>
  /** The proxy (a rule or an action) ended the socket, or it closed: nothing passes any more. */
  ended = false
  /** A frame of the socket's direction is dropped from then on (`suppress_onwards`). */
  private suppressed = { client_to_server: false, server_to_client: false }
  private timers = new Set<ReturnType<typeof setTimeout>>()
  private disconnectLogged = false
  private serverClosed = false
  private forward: (frame: ClientFrame) => void = () => {}
  readonly toServer = new Pipe(this, (f) => this.pass(f, 'client_to_server'))
  readonly toClient = new Pipe(this, (f) => this.pass(f, 'server_to_client'))

  constructor(
    readonly session: Session<FaultSocket>,
    readonly format: Format,
    /** The socket's number among the session's WebSocket connections (1-based). */
    readonly number: number,
    /** `accept_and_close`: the socket is closed with this code as soon as it opens. */
    readonly closeOnOpen?: { code: number; label: string },
  ) {}

  transport(ws: ServerWebSocket<SocketData>, format: Format): Transport {
    return new FaultTransport(ws, format, this)
  }

  /** The socket opened; `forward` hands a client frame to the gateway's connection. */
  opened(ws: ServerWebSocket<SocketData>, forward: (frame: ClientFrame) => void): void {
    this.ws = ws
    this.forward = forward
    if (this.closeOnOpen) return this.close(this.closeOnOpen.code, this.closeOnOpen.label)
    this.session.scheduleTemporal(this)
  }

  /** Runs `fn` after `ms` unless the socket is gone by then. */
  later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t)
      if (!this.ended) fn()
    }, ms)
    this.timers.add(t)
  }

  fromClient(frame: ClientFrame): void {
    if (!this.ended) this.toServer.push(frame)
  }

  /** The socket closed (whoever closed it). */
  closed(code: number): void {
    this.ended = true
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
    this.toServer.clear()
    this.toClient.clear()
    if (!this.disconnectLogged) {
      this.disconnectLogged = true
      this.session.log.add({
        type: 'ws_disconnect',
        initiator: this.serverClosed ? 'server' : 'client',
        closeCode: code,
      })
    }
    this.session.socketGone(this)
  }

  /** Whether a ping may go out (pings are frames: `suppress_onwards` to the client stops them too). */
  get pingable(): boolean {
    return !this.ended && !this.suppressed.server_to_client
  }

  /** The gateway ends the connection: its last frames go out first (past any delay). */
  serverClose(terminate: boolean): void {
    this.serverClosed = true
    if (terminate) return this.ws?.terminate()
    this.toClient.whenIdle(() => this.ws?.close(1000))
  }

  private write(frame: AnyFrame, direction: Direction): void {
    if (this.ended) return
    if (direction === 'server_to_client') this.ws?.send(frame as Frame)
    else this.forward(frame as ClientFrame)
  }

  /** One frame through the rules; a Held when a `delay` holds it. */
  private pass(frame: AnyFrame, direction: Direction): Held | void {
    if (this.ended || this.suppressed[direction]) return
    const pm = decodeFrameForLog(frame)
    const hit = this.session.findRule({
      type: direction === 'client_to_server' ? 'ws_frame_to_server' : 'ws_frame_to_client',
      action: typeof pm?.action === 'number' ? pm.action : undefined,
      channel: typeof pm?.channel === 'string' ? pm.channel : undefined,
    })
    this.session.log.add(
      { type: 'ws_frame', direction, message: pm ?? { undecodable: true }, ruleMatched: hit?.label },
      frameBytes(frame),
    )
    if (!hit) return this.write(frame, direction)
    this.session.fire(hit.rule)
    const a = hit.rule.action
    switch (a.type) {
      case 'suppress':
        return
      case 'delay':
        return { ms: a.delayMs ?? 0, write: () => this.write(frame, direction) }
      case 'inject_to_client':
        this.inject(a.message!, hit.label)
        return this.write(frame, direction)
      case 'inject_to_client_and_close':
        this.inject(a.message!, hit.label)
        return this.close(a.closeCode ?? 1000, hit.label)
      case 'replace':
        return this.write(encodeFrame(a.message!, this.format), direction)
      case 'suppress_onwards':
        this.suppressed[direction] = true
        return
      case 'disconnect':
        return this.disconnect(hit.label)
      case 'close':
        return this.close(a.closeCode ?? 1000, hit.label)
      default:
        return this.write(frame, direction)
    }
  }

  /** A temporal trigger's action (`delay_after_ws_connect`). */
  trigger(rule: Rule, label: string): void {
    const a = rule.action
    switch (a.type) {
      case 'disconnect':
        return this.disconnect(label)
      case 'close':
        return this.close(a.closeCode ?? 1000, label)
      case 'inject_to_client':
        return this.inject(a.message!, label)
      case 'inject_to_client_and_close':
        this.inject(a.message!, label)
        return this.close(a.closeCode ?? 1000, label)
      case 'suppress_onwards':
        this.suppressed.server_to_client = true
        this.session.log.add({
          type: 'action',
          initiator: 'proxy',
          message: { type: 'suppress_onwards', direction: 'server_to_client' },
          ruleMatched: label,
        })
    }
  }

  /** Sends a protocol message to the client as if the server had (in the connection's format). */
  inject(message: Record<string, unknown>, label: string | null = null): void {
    if (this.ended || !this.ws) return
    const frame = encodeFrame(message, this.format)
    this.ws.send(frame)
    this.session.log.add(
      { type: 'ws_frame', direction: 'server_to_client', message, initiator: 'proxy', ruleMatched: label },
      frameBytes(frame),
    )
  }

  /** A close frame with `code`, then the socket is closed. */
  close(code: number, label: string | null = null): void {
    if (this.ended) return
    this.endByProxy({ closeCode: code, ruleMatched: label })
    this.ws?.close(code)
  }

  /** The TCP connection cut with no close frame. */
  disconnect(label: string | null = null): void {
    if (this.ended) return
    this.endByProxy({ ruleMatched: label })
    this.ws?.terminate()
  }

  private endByProxy(e: { closeCode?: number; ruleMatched: string | null }): void {
    this.ended = true
    this.disconnectLogged = true
    this.session.log.add({ type: 'ws_disconnect', initiator: 'proxy', ...e })
  }
}

/** The Transport of a connection on a fault session's socket: every frame goes out through the socket's rules. */
class FaultTransport implements Transport {
  constructor(
    private readonly ws: ServerWebSocket<SocketData>,
    readonly format: Format,
    private readonly socket: FaultSocket,
  ) {}

  get open(): boolean {
    return this.ws.readyState === 1 && !this.socket.ended
  }

  send(pm: object): number {
    const frame = encodeServerMessage(pm, this.format)
    this.socket.toClient.push(frame)
    return frameBytes(frame)
  }

  private readonly write = (frame: Frame) => this.socket.toClient.push(frame)

  deliver(channel: string, batch: Message[], filter: DeliveryFilter): void {
    writeBatch(batch, channel, this.format, filter, this.write)
  }

  bufferedBytes(): number {
    return this.ws.getBufferedAmount() + this.socket.toClient.bytes
  }

  close(): void {
    this.socket.serverClose(false)
  }

  terminate(): void {
    this.socket.serverClose(true)
  }

  ping(): boolean {
    if (this.socket.pingable) this.ws.ping()
    return true
  }
}
