import type { CapabilityMatcher } from '../auth/capability'
import { GatewayError, type ErrorBody } from '../../errors'

/**
 * The realtime protocol's vocabulary (protocol version 6, as the official clients speak it; see
 * shared/reference/ably-realtime.md): protocol message actions, flags and channel modes.
 */
export const Action = {
  HEARTBEAT: 0,
  ACK: 1,
  NACK: 2,
  CONNECT: 3,
  CONNECTED: 4,
  DISCONNECT: 5,
  DISCONNECTED: 6,
  CLOSE: 7,
  CLOSED: 8,
  ERROR: 9,
  ATTACH: 10,
  ATTACHED: 11,
  DETACH: 12,
  DETACHED: 13,
  PRESENCE: 14,
  MESSAGE: 15,
  SYNC: 16,
  AUTH: 17,
  ACTIVATE: 18,
  OBJECT: 19,
  OBJECT_SYNC: 20,
  ANNOTATION: 21,
} as const

export const Flag = {
  HAS_PRESENCE: 1 << 0,
  HAS_BACKLOG: 1 << 1,
  RESUMED: 1 << 2,
  TRANSIENT: 1 << 4,
  ATTACH_RESUME: 1 << 5,
  HAS_OBJECTS: 1 << 7,
  PRESENCE: 1 << 16,
  PUBLISH: 1 << 17,
  SUBSCRIBE: 1 << 18,
  PRESENCE_SUBSCRIBE: 1 << 19,
  ANNOTATION_PUBLISH: 1 << 21,
  ANNOTATION_SUBSCRIBE: 1 << 22,
  OBJECT_SUBSCRIBE: 1 << 24,
  OBJECT_PUBLISH: 1 << 25,
} as const

/** Every mode bit. */
export const MODES =
  Flag.PRESENCE |
  Flag.PUBLISH |
  Flag.SUBSCRIBE |
  Flag.PRESENCE_SUBSCRIBE |
  Flag.ANNOTATION_PUBLISH |
  Flag.ANNOTATION_SUBSCRIBE |
  Flag.OBJECT_SUBSCRIBE |
  Flag.OBJECT_PUBLISH

/**
 * Modes that only permit what the client sends (nothing is delivered by them): on re-auth they
 * follow the new capability in place. The others shape the attachment's deliveries, which begin
 * at ATTACH (presence sync, object sync), so they are granted by attaching again.
 */
export const SENDING_MODES = Flag.PUBLISH | Flag.PRESENCE | Flag.ANNOTATION_PUBLISH | Flag.OBJECT_PUBLISH

/** The capability operation each mode needs. */
const MODE_OPERATIONS: Array<[number, string]> = [
  [Flag.PUBLISH, 'publish'],
  [Flag.SUBSCRIBE, 'subscribe'],
  [Flag.PRESENCE, 'presence'],
  [Flag.PRESENCE_SUBSCRIBE, 'subscribe'],
  [Flag.ANNOTATION_PUBLISH, 'annotation-publish'],
  [Flag.ANNOTATION_SUBSCRIBE, 'annotation-subscribe'],
  [Flag.OBJECT_SUBSCRIBE, 'object-subscribe'],
  [Flag.OBJECT_PUBLISH, 'object-publish'],
]

/**
 * Modes granted when an ATTACH asks for none, within what the capability allows: the hosted
 * service's default set (annotation publishing included; annotation subscribing and the object
 * modes only on request).
 */
const DEFAULT_MODES = Flag.PUBLISH | Flag.SUBSCRIBE | Flag.PRESENCE | Flag.PRESENCE_SUBSCRIBE | Flag.ANNOTATION_PUBLISH

/** The mode names of the `modes` channel param (ably-js `channelModes`, lower case). */
const MODE_NAMES = new Map<string, number>([
  ['presence', Flag.PRESENCE],
  ['publish', Flag.PUBLISH],
  ['subscribe', Flag.SUBSCRIBE],
  ['presence_subscribe', Flag.PRESENCE_SUBSCRIBE],
  ['annotation_publish', Flag.ANNOTATION_PUBLISH],
  ['annotation_subscribe', Flag.ANNOTATION_SUBSCRIBE],
  ['object_subscribe', Flag.OBJECT_SUBSCRIBE],
  ['object_publish', Flag.OBJECT_PUBLISH],
])

/**
 * The modes an ATTACH asks for: the `modes` channel param (a comma-separated list such as
 * `publish,subscribe`) when present, which overrides the mode flags (as the hosted service and
 * ably-js's own tests have it); else the mode bits of `flags`. 0: none asked for (the defaults).
 */
export function requestedModes(flags: unknown, params: Record<string, unknown>): number {
  if (typeof params.modes === 'string') {
    let modes = 0
    for (const name of params.modes.split(',')) modes |= MODE_NAMES.get(name.trim().toLowerCase()) ?? 0
    if (modes) return modes
  }
  return typeof flags === 'number' ? flags & MODES : 0
}

/** Modes the capability allows on a channel, within what was asked for (or the default set). */
export function grantedModes(capability: CapabilityMatcher, channel: string, requested: number): number {
  const wanted = requested & MODES || DEFAULT_MODES
  let granted = 0
  for (const [mode, op] of MODE_OPERATIONS) if (wanted & mode && capability.allows(channel, op)) granted |= mode
  return granted
}

/**
 * An operation the channel's attachment was not granted the mode of (`mode`, one flag: publish,
 * presence, annotation_publish, object_publish): refused on that operation alone (`what`) with
 * 40160 (401 on this protocol, see `wireError`), as the hosted service does; the attachment and
 * the connection go on.
 */
export function modeRefused(channel: string, mode: number, what: string): GatewayError {
  let name = String(mode)
  for (const [n, m] of MODE_NAMES) if (m === mode) name = n
  return new GatewayError(
    40160,
    `Channel "${channel}" is attached without the ${name} mode: ${what} is not permitted on this attachment`,
  )
}

/** A channel name as a log line carries it: what the client sent, cut to a bounded length. */
export function loggedName(name: unknown): string {
  const s = typeof name === 'string' ? name : String(name)
  return s.length > 200 ? `${s.slice(0, 200)}…` : s
}

/** A protocol message as decoded from a client frame (fields are checked where they are used). */
export interface ProtocolMessage {
  action: number
  id?: string
  channel?: string
  channelSerial?: string
  msgSerial?: number
  flags?: number
  params?: Record<string, string>
  messages?: unknown[]
  presence?: unknown[]
  auth?: { accessToken?: unknown }
  error?: ErrorBody
  [field: string]: unknown
}

/**
 * An error as this protocol carries it (NACK, channel ERROR): a capability refusal is 401 here, as
 * the hosted service's realtime answers it (the REST interfaces answer 403 by the spec).
 */
export function wireError(err: GatewayError): ErrorBody {
  const body = err.toBody()
  return err.code === 40160 ? { ...body, statusCode: 401 } : body
}
