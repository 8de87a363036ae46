/**
 * Nesting depth of JSON request bodies and frames, measured on the text before it is parsed: a
 * body nested thousands of levels deep costs the parser (and anything that walks or serializes
 * the value) far more than its size suggests, so it is refused before any value is built. The
 * scan stops at the first level too deep; it does not validate the syntax (the parser does that
 * afterwards). msgpack's depth is checked by its reader as it reads (lib/plain-msgpack.ts).
 */

const OPEN_ARRAY = 91 // [
const OPEN_OBJECT = 123 // {
const CLOSE_ARRAY = 93 // ]
const CLOSE_OBJECT = 125 // }
const QUOTE = 34 // "
const BACKSLASH = 92 // \

/** How many `[` and `{` the text holds, counting no further than `limit + 1`. */
function openings(text: string, limit: number): number {
  let n = 0
  for (let i = text.indexOf('{'); i !== -1 && n <= limit; i = text.indexOf('{', i + 1)) n++
  for (let i = text.indexOf('['); i !== -1 && n <= limit; i = text.indexOf('[', i + 1)) n++
  return n
}

/** Index of the quote that closes the JSON string opened at `open`, or -1. */
export function closingQuote(text: string, open: number): number {
  for (let q = text.indexOf('"', open + 1); q !== -1; q = text.indexOf('"', q + 1)) {
    let slashes = 0
    while (text.charCodeAt(q - 1 - slashes) === BACKSLASH) slashes++
    if (slashes % 2 === 0) return q
  }
  return -1
}

/**
 * Whether JSON text nests arrays and objects deeper than `max` levels (a top-level object or
 * array is level 1). Brackets inside strings do not count. A text with at most `max` brackets in
 * all is accepted after a few native `indexOf` calls, which is the common case.
 */
export function jsonTooDeep(text: string, max: number): boolean {
  if (openings(text, max) <= max) return false
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      i = closingQuote(text, i)
      if (i === -1) return false // unterminated: the parser refuses it
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--
  }
  return false
}
