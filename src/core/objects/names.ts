import { GatewayError } from '../../errors'
import type { ChangePosition } from './ports'

export const MAX_NAMESPACE_LENGTH = 256
export const MAX_OBJECT_ID_LENGTH = 512
const CONTROL = /[\x00-\x1f\x7f]/

/**
 * The channel an object's changes are published on: `{namespace}::$objects:{objectId}`. It is a
 * sub-channel of the namespace, so capabilities name the namespace (`game`, `game:*`, `*`) and
 * event-stream clients subscribe to it like any channel (`subscribe` on the namespace).
 */
export const objectChannel = (namespace: string, objectId: string): string => `${namespace}::$objects:${objectId}`

/** A namespace is 1-256 characters, no control characters, not `[`-qualified, no `::$` (sub-channel mark). */
export function checkNamespace(ns: unknown): string {
  if (typeof ns !== 'string' || ns.length === 0 || ns.length > MAX_NAMESPACE_LENGTH) {
    throw new GatewayError(40003, `Invalid namespace: must be 1 to ${MAX_NAMESPACE_LENGTH} characters`)
  }
  if (ns.startsWith('[') || ns.includes('::$') || CONTROL.test(ns) || !ns.isWellFormed()) {
    throw new GatewayError(40003, 'Invalid namespace: must not start with "[", contain "::$" or control characters')
  }
  return ns
}

/** An object id is 1-512 characters without control characters. */
export function checkObjectId(id: unknown): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_OBJECT_ID_LENGTH) {
    throw new GatewayError(40003, `Invalid object id: must be 1 to ${MAX_OBJECT_ID_LENGTH} characters`)
  }
  if (CONTROL.test(id) || !id.isWellFormed())
    throw new GatewayError(40003, 'Invalid object id: control characters are not allowed')
  return id
}

/** History cursors are `<timestamp>-<version>` of the last change of the previous page. */
export const cursorOf = (c: ChangePosition): string => `${c.timestamp}-${c.version}`

export function parseCursor(cursor: string): ChangePosition {
  const m = /^(\d{1,16})-(\d{1,20})$/.exec(cursor)
  if (!m) throw new GatewayError(40003, 'Invalid cursor param')
  return { timestamp: Number(m[1]), version: m[2]! }
}
