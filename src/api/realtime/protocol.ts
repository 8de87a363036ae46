import type { CapabilityMatcher } from '../../core/auth/capability'
import type { ErrorBody, GatewayError } from '../../errors'

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

/** Modes granted when an ATTACH asks for none: those the capability allows (object and annotation modes only on request). */
const DEFAULT_MODES = Flag.PUBLISH | Flag.SUBSCRIBE | Flag.PRESENCE | Flag.PRESENCE_SUBSCRIBE

/** Modes the capability allows on a channel, within what was asked for (or the default set). */
export function grantedModes(capability: CapabilityMatcher, channel: string, requested: number): number {
  const wanted = requested & MODES || DEFAULT_MODES
  let granted = 0
  for (const [mode, op] of MODE_OPERATIONS) if (wanted & mode && capability.allows(channel, op)) granted |= mode
  return granted
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
