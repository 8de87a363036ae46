import { GatewayError } from '../../errors'
import { fromBase64url } from '../../lib/encoding'
import { checkChannelName, MAX_CHANNEL_NAME } from '../model/names'
import { compileFilter, type CompiledFilter } from './filter-expression'

/**
 * A filtered (derived) channel as the official client names it (`channels.getDerived`):
 * `[filter=<base64 of the expression>]<channel>`, optionally with channel params after the
 * expression (`[filter=...?rewind=1]<channel>`). Its subscribers get the messages of `<channel>`
 * that pass the filter (filter-expression.ts); presence passes as on the channel itself.
 */
export interface FilteredChannel {
  /** The channel the messages come from (capabilities, occupancy and the log are its). */
  base: string
  filter: CompiledFilter
  /** Channel params given in the qualifier. */
  params: Record<string, string>
}

const QUALIFIED = /^\[filter=([^\]?]*)(?:\?([^\]]*))?\](.*)$/s

/** Whether a wire channel name is a filtered channel's. */
export const isFiltered = (name: unknown): name is string => typeof name === 'string' && name.startsWith('[filter=')

/**
 * Parses a filtered channel's name: the base channel checked as any channel name, the expression
 * decoded and parsed. Anything malformed is 40010 (status 400), as a bad channel name is.
 */
export function parseFilteredChannel(name: string): FilteredChannel {
  checkLength(name)
  const m = QUALIFIED.exec(name)
  if (!m) throw new GatewayError(40010, 'Invalid channel name: a filtered channel is [filter=<base64>]<channel>')
  const base = checkChannelName(m[3])
  const encoded = m[1]!
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(encoded))
    throw new GatewayError(40010, 'Invalid channel filter: the expression must be base64')
  // either alphabet, as the hosted service takes it (the decoder reads both)
  const expression = fromBase64url(encoded)
  const params: Record<string, string> = {}
  if (m[2]) for (const [k, v] of new URLSearchParams(m[2])) params[k] = v
  return { base, filter: compileFilter(expression), params }
}

/** The whole name, qualifier included, is bounded as a channel name is (and with it the expression). */
function checkLength(name: string) {
  if (name.length > MAX_CHANNEL_NAME)
    throw new GatewayError(40010, `Invalid channel name: longer than ${MAX_CHANNEL_NAME} characters`)
}
