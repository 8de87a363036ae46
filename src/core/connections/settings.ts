/** Settings of the realtime transport (see src/config/schema.ts). */
export interface RealtimeSettings {
  maxMessageSize: number
  /** Largest client frame accepted (bytes); larger ones fail the connection with 40009. */
  realtimeMaxFrameSize: number
  /** The server sends something at least this often (ms): HEARTBEAT frames or pings. */
  realtimeMaxIdleIntervalMs: number
  /** How long a dropped connection may resume with its state (ms), as told to the client. */
  connectionStateTtlMs: number
  realtimeMaxChannels: number
  /** Messages one connection may publish per second (REALTIME_MAX_INBOUND_RATE); 0 or absent: no bound. */
  realtimeMaxInboundRate?: number
  /** Messages one connection may be sent per second (REALTIME_MAX_OUTBOUND_RATE); beyond, dropped (80020); 0 or absent: no bound. */
  realtimeMaxOutboundRate?: number
  /** Unsent bytes a socket may hold before its subscriptions pause (they catch up from the log). */
  realtimeBufferBytes: number
  /** Largest payload sent as a delta, or used as the base of one (`delta=vcdiff`; bytes). */
  deltaMaxBytes: number
  /** Server-sent AUTH this long before a token expires (ms). */
  tokenRenewLeadMs: number
  /** A dropped connection keeps its presence members this long, unless it asked otherwise (ms). */
  presenceGraceMs: number
}

export interface RealtimeLimits extends RealtimeSettings {
  realtimeMaxConnections: number
}
