import { GatewayError } from '../../errors'
import type { Message } from '../types'

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
 * Bounded in cost: at most MAX_FILTER_LENGTH characters, MAX_FILTER_DEPTH levels of nesting and
 * MAX_FILTER_NODES nodes, so evaluating one message is a walk of at most that many nodes.
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

const invalid = (why: string) => new GatewayError(40010, `Invalid channel filter expression: ${why}`, { status: 400 })

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

const truthy = (v: unknown): boolean =>
  !(
    v === null ||
    v === undefined ||
    v === false ||
    v === '' ||
    (Array.isArray(v) && v.length === 0) ||
    (typeof v === 'object' && Object.keys(v as object).length === 0)
  )

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === undefined || a === null) return b === undefined || b === null
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  return ka.every((k) => equal((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
}

function evaluate(n: Node, root: Record<string, unknown>): unknown {
  switch (n.t) {
    case 'lit':
      return n.v
    case 'path': {
      let v: unknown = root
      for (const k of n.p) {
        if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, k)) return null
        v = (v as Record<string, unknown>)[k]
      }
      return v ?? null
    }
    case 'not':
      return !truthy(evaluate(n.a, root))
    case 'and': {
      const a = evaluate(n.a, root)
      return truthy(a) ? evaluate(n.b, root) : a
    }
    case 'or': {
      const a = evaluate(n.a, root)
      return truthy(a) ? a : evaluate(n.b, root)
    }
    case 'cmp': {
      const a = evaluate(n.a, root)
      const b = evaluate(n.b, root)
      if (n.op === '==') return equal(a, b)
      if (n.op === '!=') return !equal(a, b)
      if (typeof a !== 'number' || typeof b !== 'number') return null
      return n.op === '<' ? a < b : n.op === '<=' ? a <= b : n.op === '>' ? a > b : a >= b
    }
  }
}

/** Parses a filter expression (40010 when malformed or over the bounds). */
export function parseFilter(expression: string): MessageFilter {
  if (expression.length > MAX_FILTER_LENGTH) throw invalid(`longer than ${MAX_FILTER_LENGTH} characters`)
  if (!expression.trim()) throw invalid('empty')
  const tree = new Parser(expression).parse()
  return (m) => {
    const extras = m.extras
    const headers = extras?.headers
    return truthy(evaluate(tree, { name: m.name ?? null, headers: headers ?? null, extras: extras ?? null }))
  }
}
