import { GatewayError } from '../../errors'
import { checkChannelName, MAX_CHANNEL_NAME } from './names'

/**
 * A channel name qualified with channel params, as the hosted service takes them where a client
 * has no other place for them (event streams): `[?delta=vcdiff]name`. The whole name is bounded
 * as a channel name is; the channel after the qualifier is checked as any channel name. A name
 * without the qualifier is the channel itself with no params.
 */
export interface QualifiedChannel {
  channel: string
  params: Record<string, string>
}

export function parseQualifiedChannel(name: string): QualifiedChannel {
  if (!name.startsWith('[?')) return { channel: checkChannelName(name), params: {} }
  if (name.length > MAX_CHANNEL_NAME)
    throw new GatewayError(40010, `Invalid channel name: longer than ${MAX_CHANNEL_NAME} characters`)
  const end = name.indexOf(']')
  if (end < 0) throw new GatewayError(40010, 'Invalid channel name: a qualified channel is [?<params>]<channel>')
  const params: Record<string, string> = {}
  for (const [k, v] of new URLSearchParams(name.slice(2, end))) params[k] = v
  return { channel: checkChannelName(name.slice(end + 1)), params }
}
