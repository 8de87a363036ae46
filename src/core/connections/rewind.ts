import { GatewayError } from '../../errors'

/** At most this many entries are rewound, whatever the parameter asks (as the hosted service does). */
export const MAX_REWIND = 100

/**
 * The `rewind` channel parameter: a count (`10`) or a window (`30s`, `2m`), at most 100 entries
 * either way; anything else fails the attach (40003).
 */
export function parseRewind(raw: string): { count: number; ms?: number } {
  const count = /^\d{1,6}$/.exec(raw)
  if (count) return { count: Math.min(Number(raw), MAX_REWIND) }
  const window = /^(\d{1,6})(s|m)$/.exec(raw)
  if (window) return { count: MAX_REWIND, ms: Number(window[1]) * (window[2] === 'm' ? 60_000 : 1000) }
  throw new GatewayError(40003, `Invalid rewind param "${raw}": a count, or a window such as 10s or 2m`)
}
