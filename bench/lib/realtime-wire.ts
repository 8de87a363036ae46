/**
 * The realtime protocol as the benchmarks' client sees it (lib/realtime-client.ts): the connect
 * URL, what server frames carry once decoded, and what an attach, a SYNC and an answer give back.
 */
import { Action, Flag } from '../../src/core/connections/protocol'

export { Action, Flag }

export interface ErrorInfo {
  code?: number
  statusCode?: number
  message?: string
}

/** A decoded protocol message from the server. */
export interface ServerMessage {
  action: number
  channel?: string
  channelSerial?: string
  flags?: number
  msgSerial?: number
  count?: number
  res?: Array<{ serials?: Array<string | null> }>
  error?: ErrorInfo
  connectionId?: string
  connectionDetails?: Record<string, unknown>
  presence?: PresenceEntry[]
  messages?: Array<Record<string, unknown>>
  [field: string]: unknown
}

export interface PresenceEntry {
  action: number
  clientId: string
  connectionId: string
  id?: string
  data?: unknown
  timestamp?: number
}

export interface Attached {
  flags: number
  channelSerial?: string
  error?: ErrorInfo
  /** With HAS_PRESENCE: resolves when the last SYNC page arrived. */
  sync?: Promise<SyncResult>
}

export interface SyncResult {
  members: PresenceEntry[]
  frames: number
  bytes: number
  /** performance.now() when the last page arrived. */
  doneAt: number
}

/** Answer of one publish or presence protocol message: its serials, or the NACK's error. */
export type Answer = (error: ErrorInfo | undefined, serials: Array<string | null> | undefined) => void

export const describeError = (e: ErrorInfo | undefined) =>
  e ? `${e.code ?? '?'} ${e.message ?? ''}`.trim() : 'no error'

/** The connect URL the official Node client opens (its agent parameter aside). */
export function connectUrl(o: {
  base: string
  key: string
  clientId?: string
  /** Transport params added to the query (e.g. appendRollupWindow). */
  params?: Record<string, string>
}): string {
  const u = new URL(o.base)
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:'
  u.pathname = '/'
  u.search = ''
  u.searchParams.set('key', o.key)
  u.searchParams.set('format', 'msgpack')
  u.searchParams.set('heartbeats', 'false')
  u.searchParams.set('v', '6')
  if (o.clientId !== undefined) u.searchParams.set('clientId', o.clientId)
  for (const [k, v] of Object.entries(o.params ?? {})) u.searchParams.set(k, v)
  return u.toString()
}
