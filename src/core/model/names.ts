import { GatewayError } from '../../errors'

export const MAX_CHANNEL_NAME = 1024
const CONTROL = /[\x00-\x1f\x7f]/

/** Validates a channel name as it arrived (already URL-decoded); throws 40010. */
export function checkChannelName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0)
    throw new GatewayError(40010, 'Invalid channel name: must be a non-empty string')
  if (name.length > MAX_CHANNEL_NAME)
    throw new GatewayError(40010, `Invalid channel name: longer than ${MAX_CHANNEL_NAME} characters`)
  if (name.startsWith('['))
    throw new GatewayError(40010, 'Invalid channel name: qualified and meta channels are not supported here')
  // a leading `:` is an empty namespace (`:hell`, `::`), which the hosted service refuses; a
  // `::$` sub-channel qualifier after a name (`room::$chat`) stays valid
  if (name.startsWith(':')) throw new GatewayError(40010, 'Invalid channel name: must not start with ":"')
  // one pass over the name finds what needs a closer look (every publish checks its channel's name)
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i)
    if (c < 0x20 || c === 0x7f || (c >= 0xd800 && c <= 0xdfff)) return checkCharacters(name)
  }
  return name
}

/** A name with control characters or surrogates: none of the first, and the second only in pairs. */
function checkCharacters(name: string): string {
  if (CONTROL.test(name)) throw new GatewayError(40010, 'Invalid channel name: control characters are not allowed')
  // a lone surrogate (JSON `"\ud800"`) is no text: it cannot be stored, matched or sent back as sent
  if (!name.isWellFormed()) throw new GatewayError(40010, 'Invalid channel name: not well-formed Unicode')
  return name
}

/** The namespace of a channel is the part before its first `:` (none when there is no `:`). */
export const namespaceOf = (channel: string): string | undefined => {
  const i = channel.indexOf(':')
  return i > 0 ? channel.slice(0, i) : undefined
}
