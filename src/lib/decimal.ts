/**
 * Whole numbers as clients send them: a JSON number that is a safe integer, or a string of plain
 * decimal digits (an optional `-`, no sign `+`, spaces, `0x`, exponent, fraction or separators),
 * as the hosted service writes ttl and timestamp. Anything else is undefined, for the caller to
 * refuse: `Number()` would read `"0x10"` as 16, `" 5 "` as 5 and `""` as 0.
 */
const DIGITS = /^-?\d{1,16}$/

export function decimalInteger(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : undefined
  if (typeof v !== 'string' || !DIGITS.test(v)) return undefined
  const n = Number(v)
  return Number.isSafeInteger(n) ? n : undefined
}
