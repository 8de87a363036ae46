import type { ServerWebSocket } from 'bun'
import type { Connection, ConnectParams, DeliveryFilter, Message, Transport } from '../../core/connections'
import type { GatewayError } from '../../errors'
import { encodeServerMessage, writeBatch, type ClientFrame, type Format, type Frame } from './frames'

/** Per-socket data: the connection once it exists, and frames that came before it did. */
export interface SocketData {
  params: ConnectParams
  format: Format
  conn?: Connection
  early?: ClientFrame[]
  /** A refusal decided at upgrade time (sent as ERROR once the socket is open). */
  refusal?: GatewayError
  /** The fault session whose port took the socket (api/faults); none on the node's own port. */
  tap?: SocketTap
}

/**
 * What a fault session puts on the sockets of its port: the transport its connection writes
 * through (frames pass the session's rules on their way out). Decided once, when the socket
 * opens: the node's own port pays nothing for it.
 */
export interface SocketTap {
  transport(ws: ServerWebSocket<SocketData>, format: Format): Transport
}

/** The Transport port over one of Bun's server WebSockets: one frame per protocol message. */
export class SocketTransport implements Transport {
  constructor(
    private readonly ws: ServerWebSocket<SocketData>,
    readonly format: Format,
  ) {}

  get open(): boolean {
    return this.ws.readyState === 1
  }

  send(pm: object): number {
    const data = encodeServerMessage(pm, this.format)
    this.ws.send(data)
    // bytes for a binary frame; a text frame's length in characters (a bound's measure, not exact)
    return typeof data === 'string' ? data.length : data.byteLength
  }

  private readonly write = (frame: Frame) => {
    this.ws.send(frame)
  }

  deliver(channel: string, batch: Message[], filter: DeliveryFilter): void {
    writeBatch(batch, channel, this.format, filter, this.write)
  }

  bufferedBytes(): number {
    return this.ws.getBufferedAmount()
  }

  close(): void {
    this.ws.close(1000)
  }

  terminate(): void {
    this.ws.terminate()
  }

  ping(): boolean {
    this.ws.ping()
    return true
  }
}
