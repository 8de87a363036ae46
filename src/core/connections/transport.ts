import type { Message } from '../types'

/** Which entries of a delivered batch a connection's attachment takes. */
export interface DeliveryFilter {
  /** Messages (the SUBSCRIBE mode). */
  messages: boolean
  /** Presence events (the PRESENCE_SUBSCRIBE mode). */
  presence: boolean
  /** LiveObjects operations, as OBJECT frames (the OBJECT_SUBSCRIBE mode); never left out by `exceptConnection`. */
  objects: boolean
  /** Annotations (the ANNOTATION_SUBSCRIBE mode); summaries go with messages. */
  annotations?: boolean
  /** Leave out messages published by this connection (it connected with `echo=false`). */
  exceptConnection?: string
}

/**
 * The port a realtime connection speaks through: one adapter per transport (WebSocket, comet).
 * The connection (the protocol state machine) decides what goes out and when; the adapter frames
 * it in its wire format (JSON or msgpack) and writes it. Protocol messages are handed over as
 * plain objects in the protocol's field names; entries (messages, presence members) in the core's
 * forms, which the adapter turns into their wire forms.
 */
export interface Transport {
  /** The wire format, as the adapter names it (diagnostics, logs). */
  readonly format: string
  /** Whether frames still reach the client (false once it went away). */
  readonly open: boolean
  /**
   * Writes one protocol message (an answer, ATTACHED, a heartbeat...); a SYNC's `presence` holds
   * core presence messages. Returns the bytes written.
   */
  send(pm: object): number
  /** Writes the entries of one delivered batch of a channel that `filter` lets through. */
  deliver(channel: string, batch: Message[], filter: DeliveryFilter): void
  /** Bytes written and not yet taken by the client. */
  bufferedBytes(): number
  /** Ends the transport once what was written went out (a goodbye frame was sent before). */
  close(): void
  /** Cuts the transport at once, as a network failure would. */
  terminate(): void
  /** Keeps an idle client's timer fed without a protocol message; false when the transport has no such thing. */
  ping(): boolean
}
