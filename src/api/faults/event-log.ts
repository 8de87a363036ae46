/**
 * A fault session's event log (the uts-proxy's event format): every connect, frame, request,
 * response, disconnect and action, in order. Bounded in events and in bytes (a frame or body
 * counts its size on the wire): beyond either, the oldest events are dropped and counted.
 */
export interface FaultEvent {
  timestamp: string
  type: 'ws_connect' | 'ws_frame' | 'ws_disconnect' | 'http_request' | 'http_response' | 'action'
  direction?: 'client_to_server' | 'server_to_client'
  url?: string
  queryParams?: Record<string, string>
  message?: unknown
  method?: string
  path?: string
  status?: number
  initiator?: 'client' | 'server' | 'proxy'
  closeCode?: number
  /** The label of the rule that matched (its comment, or `rule-<index>`), null when none did. */
  ruleMatched: string | null
  headers?: Record<string, string>
}

/** What an event costs beside its payload (its fields), in the byte budget. */
const EVENT_OVERHEAD = 160

export class EventLog {
  private events: FaultEvent[] = []
  private sizes: number[] = []
  /** Index of the oldest kept event (dropped ones are compacted away now and then). */
  private start = 0
  private bytes = 0
  /** Events dropped to stay within the bounds. */
  dropped = 0

  constructor(
    private readonly maxEvents: number,
    private readonly maxBytes: number,
  ) {}

  /** Appends an event (its timestamp set now); `payloadBytes`: the size of its frame or body on the wire. */
  add(e: Omit<FaultEvent, 'timestamp' | 'ruleMatched'> & { ruleMatched?: string | null }, payloadBytes = 0): void {
    const event = { timestamp: new Date().toISOString(), ...e, ruleMatched: e.ruleMatched ?? null } as FaultEvent
    const size = EVENT_OVERHEAD + payloadBytes
    this.events.push(event)
    this.sizes.push(size)
    this.bytes += size
    while (this.events.length - this.start > this.maxEvents || (this.bytes > this.maxBytes && this.length > 1)) {
      this.bytes -= this.sizes[this.start]!
      this.start++
      this.dropped++
    }
    if (this.start > 1024 && this.start * 2 > this.events.length) {
      this.events = this.events.slice(this.start)
      this.sizes = this.sizes.slice(this.start)
      this.start = 0
    }
  }

  get length(): number {
    return this.events.length - this.start
  }

  /** The kept events, oldest first (a copy). */
  list(): FaultEvent[] {
    return this.events.slice(this.start)
  }
}
