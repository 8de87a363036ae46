import { GatewayError } from '../../errors'
import type { Message } from '../types'
import type { CompiledFilter, Meter } from '../fanout/channel-filters'

export type { CompiledFilter, Meter }

/**
 * Subscription filter expressions (the hosted service's filtered channels): the JMESPath subset
 * its filters use, over a message's `name`, `headers` (its `extras.headers`) and `extras`. A
 * filter is parsed once, when the channel is attached, and evaluated on the node for each message
 * before delivery; the message's data is never read.
 *
 * Grammar (lowest precedence first):
 *   or    := and ('||' and)*
 *   and   := not ('&&' not)*
 *   not   := '!' not | cmp
 *   cmp   := value (('==' | '!=' | '<' | '<=' | '>' | '>=') value)?
 *   value := '(' or ')' | '`' JSON '`' | "'" raw string "'" | path
 *   path  := ident ('.' ident)*      ident := [A-Za-z_][A-Za-z0-9_]* | "JSON string"
 * As in JMESPath, a missing field is null, an ordering comparison of anything but two numbers is
 * null, `&&` / `||` answer one of their operands, and null, false, '', [] and {} are false. A
 * message matches when the whole expression is true in that sense.
 *
 * Bounded in size: at most MAX_FILTER_LENGTH characters, MAX_FILTER_DEPTH levels of nesting and
 * MAX_FILTER_NODES nodes. The work of one evaluation also depends on the message (comparing two of
 * its parts walks them), so it is measured in steps against a meter (`Meter`), and the node bounds
 * what all filters of a channel may spend on one delivered batch (fanout/channel-filters.ts).
 */
export const MAX_FILTER_LENGTH = 1024
export const MAX_FILTER_DEPTH = 32
export const MAX_FILTER_NODES = 256

type Node =
  | { t: 'lit'; v: unknown }
  | { t: 'path'; p: string[] }
  | { t: 'not'; a: Node }
  | { t: 'and' | 'or'; a: Node; b: Node }
  | { t: 'cmp'; op: string; a: Node; b: Node }

/** A parsed filter: whether a message passes it. */
export type MessageFilter = (m: Message) => boolean

const invalid = (why: string) => new GatewayError(40010, `Invalid channel filter expression: ${why}`)

const COMPARATORS = ['==', '!=', '<=', '>=', '<', '>']

class Parser {
  private i = 0
  private nodes = 0

  constructor(private readonly s: string) {}

  parse(): Node {
    const n = this.or(0)
    this.ws()
    if (this.i < this.s.length) throw invalid(`unexpected "${this.s[this.i]}" at ${this.i}`)
    return n
  }

  private node<T extends Node>(n: T, depth: number): T {
    if (++this.nodes > MAX_FILTER_NODES) throw invalid(`more than ${MAX_FILTER_NODES} terms`)
    if (depth > MAX_FILTER_DEPTH) throw invalid(`nested more than ${MAX_FILTER_DEPTH} deep`)
    return n
  }

  private ws() {
    while (this.i < this.s.length && ' \t\r\n'.includes(this.s[this.i]!)) this.i++
  }

  private eat(tok: string): boolean {
    this.ws()
    if (!this.s.startsWith(tok, this.i)) return false
    this.i += tok.length
    return true
  }

  private or(d: number): Node {
    let a = this.and(d + 1)
    while (this.eat('||')) a = this.node({ t: 'or', a, b: this.and(d + 1) }, d)
    return a
  }

  private and(d: number): Node {
    let a = this.not(d + 1)
    while (this.eat('&&')) a = this.node({ t: 'and', a, b: this.not(d + 1) }, d)
    return a
  }

  private not(d: number): Node {
    this.ws()
    if (this.s[this.i] === '!' && this.s[this.i + 1] !== '=') {
      this.i++
      return this.node({ t: 'not', a: this.not(d + 1) }, d)
    }
    return this.cmp(d)
  }

  private cmp(d: number): Node {
    const a = this.value(d + 1)
    this.ws()
    const op = COMPARATORS.find((c) => this.s.startsWith(c, this.i))
    if (!op) return a
    this.i += op.length
    return this.node({ t: 'cmp', op, a, b: this.value(d + 1) }, d)
  }

  private value(d: number): Node {
    this.ws()
    const c = this.s[this.i]
    if (c === undefined) throw invalid('unexpected end')
    if (c === '(') {
      this.i++
      const n = this.or(d + 1)
      if (!this.eat(')')) throw invalid(`")" expected at ${this.i}`)
      return n
    }
    if (c === '`') return this.node({ t: 'lit', v: this.jsonLiteral() }, d)
    if (c === "'") return this.node({ t: 'lit', v: this.rawString() }, d)
    const p: string[] = [this.ident()]
    while (this.s[this.i] === '.') {
      this.i++
      p.push(this.ident())
    }
    return this.node({ t: 'path', p }, d)
  }

  private ident(): string {
    const rest = this.s.slice(this.i)
    const bare = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest)
    if (bare) {
      this.i += bare[0].length
      return bare[0]
    }
    const quoted = /^"(?:[^"\\]|\\.)*"/.exec(rest)
    if (quoted) {
      this.i += quoted[0].length
      try {
        return JSON.parse(quoted[0]) as string
      } catch {
        throw invalid(`bad quoted identifier at ${this.i}`)
      }
    }
    throw invalid(`a field, literal or "(" expected at ${this.i}`)
  }

  private jsonLiteral(): unknown {
    const start = ++this.i
    while (this.i < this.s.length && this.s[this.i] !== '`') this.i += this.s[this.i] === '\\' ? 2 : 1
    if (this.i >= this.s.length) throw invalid('unterminated `literal`')
    const text = this.s.slice(start, this.i++).replace(/\\`/g, '`')
    try {
      return JSON.parse(text)
    } catch {
      throw invalid(`\`${text}\` is not a JSON literal`)
    }
  }

  private rawString(): string {
    let out = ''
    for (this.i++; this.i < this.s.length; this.i++) {
      const c = this.s[this.i]!
      if (c === "'") {
        this.i++
        return out
      }
      if (c === '\\' && this.s[this.i + 1] === "'") {
        out += "'"
        this.i++
      } else out += c
    }
    throw invalid("unterminated 'string'")
  }
}

/**
 * Spends `steps`; true once the meter has run out. From then on every step of the evaluation
 * answers at once (null, false) without further work, and the caller reads `left < 0`.
 */
const charge = (meter: Meter, steps: number): boolean => (meter.left -= steps) < 0

/**
 * The own keys of an object, listed once per object and remembered while it lives: a message's
 * objects are shared by every filter and subscriber, so a large `headers` is listed once per
 * message, not once per filter or comparison. Listing is charged to the meter that needs it first.
 */
const keyLists = new WeakMap<object, string[]>()
function keysOf(o: object, meter: Meter): string[] {
  let keys = keyLists.get(o)
  if (keys === undefined) {
    keys = Object.keys(o)
    keyLists.set(o, keys)
    meter.left -= keys.length
  }
  return keys
}

function truthy(v: unknown, meter: Meter): boolean {
  if (v === null || v === undefined || v === false || v === '') return false
  if (typeof v !== 'object') return true
  return Array.isArray(v) ? v.length > 0 : keysOf(v, meter).length > 0
}

/**
 * JMESPath equality. Work is bounded by the smaller operand: lengths and key counts are compared
 * before any element, and a comparison stops at the first difference.
 */
function equal(a: unknown, b: unknown, meter: Meter): boolean {
  if (charge(meter, 1)) return false
  if (a === b) return true
  if (a === undefined || a === null) return b === undefined || b === null
  if (typeof a === 'string') {
    if (typeof b !== 'string' || a.length !== b.length) return false
    return !charge(meter, a.length >> 6) && a === b
  }
  if (typeof a !== 'object' || typeof b !== 'object' || b === null) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!equal(a[i], b[i], meter)) return false
    return true
  }
  if (Array.isArray(b)) return false
  const ka = keysOf(a, meter)
  if (ka.length !== keysOf(b, meter).length) return false
  const ra = a as Record<string, unknown>
  const rb = b as Record<string, unknown>
  for (const k of ka) if (!Object.hasOwn(rb, k) || !equal(ra[k], rb[k], meter)) return false
  return true
}

function evaluate(n: Node, root: Record<string, unknown>, meter: Meter): unknown {
  if (charge(meter, 1)) return null
  switch (n.t) {
    case 'lit':
      return n.v
    case 'path': {
      if (charge(meter, n.p.length)) return null
      let v: unknown = root
      for (const k of n.p) {
        if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, k)) return null
        v = (v as Record<string, unknown>)[k]
      }
      return v ?? null
    }
    case 'not':
      return !truthy(evaluate(n.a, root, meter), meter)
    case 'and': {
      const a = evaluate(n.a, root, meter)
      return truthy(a, meter) ? evaluate(n.b, root, meter) : a
    }
    case 'or': {
      const a = evaluate(n.a, root, meter)
      return truthy(a, meter) ? a : evaluate(n.b, root, meter)
    }
    case 'cmp':
      return compare(n.op, evaluate(n.a, root, meter), evaluate(n.b, root, meter), meter)
  }
}

function compare(op: string, a: unknown, b: unknown, meter: Meter): unknown {
  if (op === '==') return equal(a, b, meter)
  if (op === '!=') return !equal(a, b, meter)
  if (typeof a !== 'number' || typeof b !== 'number') return null
  return op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b
}

/** A meter that never runs out (parsing, and callers that bound the work otherwise). */
const unmetered = (): Meter => ({ left: Infinity })

/**
 * The tree with every part that reads nothing of the message computed once, at parse time: a
 * comparison of two literals, or `&&`, `||` and `!` over a literal, cost nothing per message.
 */
function fold(n: Node): Node {
  switch (n.t) {
    case 'lit':
    case 'path':
      return n
    case 'not': {
      const a = fold(n.a)
      return a.t === 'lit' ? { t: 'lit', v: !truthy(a.v, unmetered()) } : { t: 'not', a }
    }
    case 'and':
    case 'or': {
      const a = fold(n.a)
      const b = fold(n.b)
      if (a.t !== 'lit') return { t: n.t, a, b }
      return truthy(a.v, unmetered()) === (n.t === 'and') ? b : a
    }
    case 'cmp': {
      const a = fold(n.a)
      const b = fold(n.b)
      if (a.t === 'lit' && b.t === 'lit') return { t: 'lit', v: compare(n.op, a.v, b.v, unmetered()) }
      return { t: 'cmp', op: n.op, a, b }
    }
  }
}

/** Parses a filter expression (40010 when malformed or over the bounds). */
export function compileFilter(expression: string): CompiledFilter {
  if (expression.length > MAX_FILTER_LENGTH) throw invalid(`longer than ${MAX_FILTER_LENGTH} characters`)
  if (!expression.trim()) throw invalid('empty')
  const tree = fold(new Parser(expression).parse())
  return {
    expression,
    matches(m, meter) {
      const extras = m.extras
      const headers = extras?.headers
      const root = { name: m.name ?? null, headers: headers ?? null, extras: extras ?? null }
      const pass = truthy(evaluate(tree, root, meter), meter)
      return meter.left < 0 ? undefined : pass
    },
  }
}

/** Parses a filter expression into a test without a bound on its work (tests, trusted callers). */
export function parseFilter(expression: string): MessageFilter {
  const filter = compileFilter(expression)
  return (m) => filter.matches(m, unmetered()) === true
}
