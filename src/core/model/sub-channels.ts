import { GatewayError, denied } from '../../errors'
import type { MessageDraft } from '../types'

/**
 * Channel publishes (realtime and REST) on `::$` qualified channels, as the Chat and Spaces SDKs
 * make them. Capabilities name the base channel (`authName`), so only the qualifier decides here:
 *
 * - `<space>::$space` and `<space>::$cursors` (Spaces) are plain channels: presence, and the
 *   cursor batches, which are stored (`cursors.getAll` reads them back from history).
 * - `<room>::$chat` (Chat) takes ephemeral messages only: typing and room reactions. The room's
 *   log is the chat store (chat history is read from its `chat.message` create events), so
 *   nothing a channel publish sends is stored there, and the names the chat service itself
 *   publishes (`chat.message`, `[meta]...`) are refused even ephemeral: a client cannot forge a
 *   chat message, live or in history. Chat messages go through the Chat REST API.
 * - every other qualifier (`::$objects:...` of LiveObjects, and any unknown one) stays reserved.
 */
const OPEN = new Set(['space', 'cursors'])
const CHAT = 'chat'

/** Names only the chat service publishes on a room channel. */
const isChatServiceName = (name: string | undefined) =>
  name !== undefined && (name === 'chat.message' || name.startsWith('[meta]'))

/** The qualifier of a `::$` channel (`chat` of `room::$chat`), or undefined for a plain channel. */
export function qualifierOf(channel: string): string | undefined {
  const i = channel.indexOf('::$')
  if (i < 0) return undefined
  const end = channel.indexOf(':', i + 3)
  return end < 0 ? channel.slice(i + 3) : channel.slice(i + 3, end)
}

/** A message that is delivered live and never stored (`extras.ephemeral: true`). */
export const isEphemeral = (d: MessageDraft): boolean => d.extras?.ephemeral === true

/**
 * Whether the publish is ephemeral (every message is; a mix is refused), after checking that
 * its channel takes channel publishes. Throws 40160 on a reserved channel or name.
 */
export function checkPublish(channel: string, drafts: MessageDraft[]): boolean {
  let ephemeral = 0
  for (const d of drafts) if (isEphemeral(d)) ephemeral++
  if (ephemeral !== 0 && ephemeral !== drafts.length)
    throw new GatewayError(
      40003,
      'Invalid publish request: ephemeral and stored messages cannot be published together; publish them separately',
    )
  const q = qualifierOf(channel)
  if (q === undefined || OPEN.has(q)) return ephemeral !== 0
  if (q === CHAT) {
    if (ephemeral === 0)
      throw denied(
        `Channel "${channel}" takes only ephemeral messages (extras.ephemeral: true) from channel publishes; chat messages are sent through the Chat REST API`,
      )
    const forged = drafts.find((d) => isChatServiceName(d.name))
    if (forged) throw denied(`Message name "${forged.name}" is reserved for the chat service on "${channel}"`)
    return true
  }
  throw denied(`Channel "${channel}" is reserved for the chat and LiveObjects interfaces`)
}

/**
 * Whether a `::$` channel's history is service state kept for the persisted window whatever
 * the namespace rules say: chat rooms and LiveObjects channels (Spaces channels follow the
 * rules of their name, as plain channels do).
 */
export function isServiceChannel(channel: string): boolean {
  const q = qualifierOf(channel)
  return q !== undefined && !OPEN.has(q)
}

/**
 * Whether a realtime publish or presence operation refused on this channel is acknowledged and
 * dropped instead of NACKed: `<space>::$cursors`, where @ably/spaces publishes its cursor batches
 * and enters presence without awaiting either, so a NACK would be an unhandled rejection that ends
 * the client's Node process. Dropped, the refused batch reaches nobody, which is what a refusal
 * means for everyone else; the refusal is logged at debug.
 */
export const dropsRefusals = (channel: string): boolean => qualifierOf(channel) === 'cursors'
