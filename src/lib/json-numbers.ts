import { closingQuote } from './nesting'

/**
 * Numbers of JSON text that a 64-bit float cannot hold: `1e400` parses as Infinity (written back
 * as null) and `1e-400` as 0, so a value would change silently between the request and what is
 * stored. Such a number has a run of 20 digits or an exponent of 3 (fewer digits on each side of
 * the point and a 2-digit exponent stay between 1e-120 and 1e120): text with neither, nearly
 * every body, costs one native regular-expression scan; text with one is read once more, outside
 * strings. Syntax is left to the parser.
 */
const SUSPECT = /\d{20}|[eE][+-]?\d{3}/

const QUOTE = 34 // "
const MINUS = 45 // -
const isDigit = (c: number) => c >= 48 && c <= 57
/** Characters a JSON number token is made of: digits, `-`, `+`, `.`, `e`, `E`. */
const inNumber = (c: number) => isDigit(c) || c === MINUS || c === 43 || c === 46 || c === 101 || c === 69

/** The first number of the JSON text that overflows to Infinity or underflows to 0, or undefined. */
export function jsonNumberOutOfRange(text: string): string | undefined {
  if (!SUSPECT.test(text)) return undefined
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      i = closingQuote(text, i)
      if (i === -1) return undefined
    } else if (isDigit(c) || c === MINUS) {
      let end = i + 1
      while (end < text.length && inNumber(text.charCodeAt(end))) end++
      const token = text.slice(i, end)
      const n = Number(token)
      if (!Number.isFinite(n)) return token
      // 0 from a mantissa with a digit other than 0: underflow
      if (n === 0 && /[1-9]/.test(token.split(/[eE]/)[0]!)) return token
      i = end - 1
    }
  }
  return undefined
}
