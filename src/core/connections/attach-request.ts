import type { Principal } from '../auth/principal'
import { isFiltered, parseFilteredChannel } from '../channels/filtered-channel'
import type { CompiledFilter } from '../channels/filter-expression'
import { GatewayError } from '../../errors'
import { grantedModes, requestedModes, type ProtocolMessage } from './protocol'

/**
 * Channel params the server recognises, echoed in ATTACHED as sent (others are dropped, as the
 * hosted service does): `rewind`, `modes` (which overrides the mode flags), and `delta`, echoed
 * only when honoured (`vcdiff`, the one format there is; another value is dropped and full
 * payloads are sent). A step may echo one more (attach-step.ts: `occupancy`).
 */
const RECOGNISED_PARAMS = new Set(['rewind', 'modes', 'delta'])
export const DELTA_FORMAT = 'vcdiff'

/** What an ATTACH asks for, read and granted: what its start, its steps and its stages are decided by. */
export interface AttachRequest {
  /** The name the client attached (a filtered channel's `[filter=...]name` whole): the frames carry it. */
  readonly wireName: string
  /** The channel whose log, capability and occupancy these are (a filtered channel's base). */
  readonly channel: string
  /** A filtered channel's filter (channels/filtered-channel.ts). */
  readonly filter?: CompiledFilter
  /** The channel params: the name's qualifier's, overridden by the ATTACH's own. */
  readonly params: Readonly<Record<string, unknown>>
  /** The modes asked for (0: the default set), which a re-auth grants again. */
  readonly requested: number
  /** The modes granted (never 0). */
  readonly modes: number
  /** The recognised params ATTACHED echoes. */
  readonly echoed: Record<string, string>
}

/**
 * An ATTACH of `wireName` (checked by the caller) read: a filtered channel (`[filter=...]name`)
 * is the channel `name` with its messages filtered on delivery; the modes are those the
 * capability grants of the ones asked for, none of them failing the attach (40160).
 */
export function readAttach(wireName: string, pm: ProtocolMessage, principal: Principal): AttachRequest {
  const derived = isFiltered(wireName) ? parseFilteredChannel(wireName) : undefined
  const channel = derived?.base ?? wireName
  const own = typeof pm.params === 'object' && pm.params !== null ? pm.params : {}
  const params = { ...derived?.params, ...own }
  const requested = requestedModes(pm.flags, params)
  const modes = grantedModes(principal.capability, channel, requested)
  if (!modes) throw new GatewayError(40160, `No capability on channel "${channel}" for any of the requested modes`)
  const echoed: Record<string, string> = {}
  for (const [k, v] of Object.entries(params)) if (RECOGNISED_PARAMS.has(k)) echoed[k] = String(v)
  if (echoed.delta !== undefined && echoed.delta !== DELTA_FORMAT) delete echoed.delta
  return { wireName, channel, filter: derived?.filter, params, requested, modes, echoed }
}
