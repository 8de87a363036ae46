import { denied } from '../../errors'
import type { Principal } from './principal'

/** Asserts the principal may do `op` on `channel`; 403 (40160) otherwise. */
export function authorize(p: Principal, channel: string, op: string): void {
  if (!p.capability.allows(channel, op))
    throw denied(`Operation "${op}" not permitted on channel "${channel}" with the provided capability`)
}

/**
 * Changes of a message (`message-update`, `message-delete`): `<op>-any` allows any message,
 * `<op>-own` only the caller's own (the message's publisher is the caller's identified clientId).
 * `where` names the channel in the refusal (e.g. `room "x"`).
 */
export function authorizeChange(
  p: Principal,
  channel: string,
  op: 'message-update' | 'message-delete',
  author: string | undefined,
  where = `channel "${channel}"`,
): void {
  if (p.capability.allows(channel, `${op}-any`)) return
  const own = author !== undefined && p.clientId !== undefined && p.clientId !== '*' && p.clientId === author
  if (own && p.capability.allows(channel, `${op}-own`)) return
  throw denied(
    `Operation "${op}-any"${own ? ` or "${op}-own"` : ''} not permitted on ${where} with the provided capability`,
  )
}
