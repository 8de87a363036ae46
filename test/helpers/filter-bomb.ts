/**
 * The filter bomb (issue 40, item 1): filtered-channel expressions that never match and cost as
 * much as the filter grammar's bounds allow, and publishes that make each of them work on every
 * message. Used by test/hostile/filters.test.ts and bench/filter-bomb.ts.
 *
 * - `literals`: two object literals of ~40 keys compared (equal but for the last key);
 * - `headers`: the message's `headers` compared with such a literal (the message's headers have
 *   the literal's keys but for the last one);
 * - `pairs`: two large parts of the message's headers compared with each other, again and again.
 */
import { MAX_CHANNEL_NAME } from '../../src/core/model/names'

export type BombKind = 'literals' | 'headers' | 'pairs'

/** A filtered channel's wire name for `base`. */
export interface BombFilter {
  expression: string
  wire(base: string): string
}

const b64 = (s: string) => Buffer.from(s).toString('base64')

/** An object literal of `keys` keys `k0...`, the last one's value `last`. */
const literal = (keys: number, last: number) =>
  '{' + Array.from({ length: keys }, (_, k) => `"k${k}":${k === keys - 1 ? last : k}`).join(',') + '}'

/** The headers the `headers` and `pairs` kinds compare (~`bytes` of JSON). */
function bombHeaders(kind: BombKind, keys: number, bytes: number): Record<string, unknown> {
  if (kind === 'headers') return JSON.parse(literal(keys, -2))
  const half = Array.from({ length: Math.max(1, Math.floor(bytes / 2 / 12)) }, (_, k) => k)
  return { a: half, b: [...half.slice(0, -1), -1] }
}

/** `n` distinct filters of `kind`, each as long as a channel name allows (base `bomb`). */
export function bombFilters(kind: BombKind, n: number, base = 'bomb'): BombFilter[] {
  const room = Math.floor(((MAX_CHANNEL_NAME - `[filter=]${base}`.length) * 3) / 4) - 8
  const out: BombFilter[] = []
  for (let i = 0; i < n; i++) {
    let expression: string
    if (kind === 'pairs') {
      const term = 'headers.a == headers.b'
      expression = `name == '${i}'`
      while (expression.length + term.length + 4 <= room) expression += ` || ${term}`
    } else {
      let keys = 1
      const make = (k: number) =>
        kind === 'literals' ? `\`${literal(k, i)}\` == \`${literal(k, -1)}\`` : `headers == \`${literal(k, -1 - i)}\``
      while (make(keys + 1).length <= room) keys++
      expression = make(keys)
    }
    out.push({ expression, wire: (b) => `[filter=${b64(expression)}]${b}` })
  }
  return out
}

/** The keys of the `headers` kind's literal for a filter of that kind (as bombFilters builds them). */
function headerKeys(base = 'bomb'): number {
  const f = bombFilters('headers', 1, base)[0]!.expression
  return (f.match(/"k\d+"/g) ?? []).length
}

/** A publish of `count` messages, ~`bytes` of JSON in all, that every bomb filter of `kind` must work on. */
export function bombMessages(kind: BombKind, count: number, bytes: number): Array<Record<string, unknown>> {
  const headers = kind === 'literals' ? undefined : bombHeaders(kind, headerKeys(), bytes / count)
  const per = JSON.stringify(headers ?? {}).length
  // as many messages as fit in `bytes` (headers of the `headers` kind are ~800 bytes each)
  count = Math.max(1, Math.min(count, Math.floor(bytes / (per + 61))))
  const pad = Math.max(1, Math.floor(bytes / count - per - 60))
  return Array.from({ length: count }, (_, i) => ({
    name: `m${i}`,
    data: 'x'.repeat(pad),
    ...(headers ? { extras: { headers } } : {}),
  }))
}
