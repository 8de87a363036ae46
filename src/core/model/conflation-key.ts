import { GatewayError } from '../../errors'
import type { Message } from '../types'

/** The conflation key of a message on a channel (`conflationKey` of a namespace rule, compiled). */
export type KeyOf = (m: Message, channel: string) => string

type Value = (m: Message, channel: string) => string

const VARIABLES: Record<string, Value> = {
  channelName: (_m, channel) => channel,
  'message.name': (m) => m.name ?? '',
  'message.id': (m) => m.id,
  'message.clientId': (m) => m.clientId ?? '',
}
const HEADER = /^message\.extras\.headers\[\s*(?:'([^']*)'|"([^"]*)")\s*\]$/
const FILTER = /^(hash|moduloHash)\s*(?:\(\s*([^)]*)\))?$/

const bad = (why: string) => new GatewayError(40000, `Invalid conflationKey: ${why}`)

/**
 * Compiles a conflation key in the hosted service's routing and conflation syntax: text with
 * `#{...}` interpolations of `channelName`, `message.name`, `message.id`, `message.clientId` and
 * `message.extras.headers['<name>']` (absent values are empty), each optionally followed by a
 * filter, `| hash` or `| hash(<base>)` (a 32-bit fingerprint, in base 16 unless told) or
 * `| moduloHash(<buckets>)` / `| moduloHash(<buckets>, <base>)`; a filter may take a tuple of
 * variables, `(message.name, channelName) | hash`. Text without interpolation is one key for
 * every message. Anything else is 40000.
 */
export function compileKey(template: string): KeyOf {
  const parts: Value[] = []
  let i = 0
  while (i < template.length) {
    const open = template.indexOf('#{', i)
    if (open < 0) {
      const text = template.slice(i)
      parts.push(() => text)
      break
    }
    if (open > i) {
      const text = template.slice(i, open)
      parts.push(() => text)
    }
    const close = template.indexOf('}', open)
    if (close < 0) throw bad(`"#{" at ${open} is not closed`)
    parts.push(expression(template.slice(open + 2, close).trim()))
    i = close + 1
  }
  if (parts.length === 1) return parts[0]!
  return (m, channel) => {
    let out = ''
    for (const p of parts) out += p(m, channel)
    return out
  }
}

function expression(text: string): Value {
  const bar = text.indexOf('|')
  const input = (bar < 0 ? text : text.slice(0, bar)).trim()
  const values =
    input.startsWith('(') && input.endsWith(')')
      ? input
          .slice(1, -1)
          .split(',')
          .map((v) => variable(v.trim()))
      : [variable(input)]
  const value: Value =
    values.length === 1 ? values[0]! : (m, channel) => values.map((v) => v(m, channel)).join('\u0000')
  return bar < 0 ? value : filtered(value, text.slice(bar + 1).trim())
}

function variable(name: string): Value {
  const known = VARIABLES[name]
  if (known) return known
  const h = HEADER.exec(name)
  if (!h) throw bad(`unknown variable "${name}"`)
  const header = h[1] ?? h[2]!
  return (m) => {
    const v = (m.extras?.headers as Record<string, unknown> | undefined)?.[header]
    return v === undefined || v === null ? '' : String(v)
  }
}

function filtered(value: Value, text: string): Value {
  const f = FILTER.exec(text)
  if (!f) throw bad(`unknown filter "${text}"`)
  const args = f[2] === undefined || f[2].trim() === '' ? [] : f[2].split(',').map((a) => Number(a.trim()))
  if (args.some((a) => !Number.isSafeInteger(a))) throw bad(`the arguments of ${f[1]} are integers`)
  if (f[1] === 'hash') {
    const base = radix(args[0] ?? 16, args.length > 1)
    return (m, channel) => fingerprint(value(m, channel)).toString(base)
  }
  const buckets = args[0]
  if (buckets === undefined || buckets < 1 || args.length > 2) throw bad('moduloHash takes a bucket count (and a base)')
  const base = radix(args[1] ?? 16, false)
  return (m, channel) => (fingerprint(value(m, channel)) % buckets).toString(base)
}

function radix(base: number, extra: boolean): number {
  if (extra || base < 2 || base > 36) throw bad('a base is from 2 to 36')
  return base
}

/** FNV-1a, 32 bits, of the UTF-16 code units. */
function fingerprint(s: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}
