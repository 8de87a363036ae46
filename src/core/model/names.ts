import { GatewayError } from '../../errors'

export const MAX_CHANNEL_NAME = 1024

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
  // one pass over the characters (every publish checks its channel's name): no control character
  // anywhere, and the well-formedness of the whole only for a name with a surrogate
  let surrogates = false
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i)
    if (c < 0x20 || c === 0x7f)
      throw new GatewayError(40010, 'Invalid channel name: control characters are not allowed')
    if (c >= 0xd800 && c <= 0xdfff) surrogates = true
  }
  // a lone surrogate (JSON `"\ud800"`) is no text: it cannot be stored, matched or sent back as sent
  if (surrogates && !name.isWellFormed()) throw new GatewayError(40010, 'Invalid channel name: not well-formed Unicode')
  return name
}

/** The namespace of a channel is the part before its first `:` (none when there is no `:`). */
export const namespaceOf = (channel: string): string | undefined => {
  const i = channel.indexOf(':')
  return i > 0 ? channel.slice(0, i) : undefined
}
