import { GatewayError } from '../../errors'
import type { Capability } from '../types'

/** Operations a capability may grant (hosted service's list). `*` grants all and stands alone. */
export const OPERATIONS = new Set([
  'subscribe',
  'publish',
  'presence',
  'history',
  'stats',
  'channel-metadata',
  'push-subscribe',
  'push-admin',
  'object-subscribe',
  'object-publish',
  'annotation-subscribe',
  'annotation-publish',
  'message-update-own',
  'message-update-any',
  'message-delete-own',
  'message-delete-any',
  'privileged-headers',
])

const invalid = (why: string) => new GatewayError(40000, `Invalid capability: ${why}`)

/** Parses a capability given as a JSON string or object and validates it; throws 400 when invalid. */
export function parseCapability(input: unknown): Capability {
  let value = input
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input)
    } catch {
      throw invalid('not valid JSON')
    }
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw invalid('must be an object of resource to operations')
  const out: Capability = {}
  for (const [resource, ops] of Object.entries(value as Record<string, unknown>)) {
    if (!resource) throw invalid('empty resource name')
    if (!Array.isArray(ops) || ops.length === 0) throw invalid(`operations of "${resource}" must be a non-empty array`)
    for (const op of ops) {
      if (typeof op !== 'string') throw invalid(`operation of "${resource}" is not a string`)
      if (op !== '*' && !OPERATIONS.has(op)) throw invalid(`unknown operation "${op}"`)
    }
    if (ops.includes('*') && ops.length > 1)
      throw invalid(`"*" cannot be combined with other operations on "${resource}"`)
    out[resource] = [...new Set(ops as string[])]
  }
  if (Object.keys(out).length === 0) throw invalid('no resources')
  return out
}

/** Canonical JSON: resources and operations sorted, no whitespace. */
export function canonicalCapability(cap: Capability): string {
  const sorted: Capability = {}
  for (const r of Object.keys(cap).sort()) sorted[r] = [...cap[r]!].sort()
  return JSON.stringify(sorted)
}

/** Strips sub-channel suffixes (`room::$chat`): sub-channels are authorised as their base name. */
export const authName = (channel: string): string => {
  const i = channel.indexOf('::$')
  return i < 0 ? channel : channel.slice(0, i)
}

/**
 * Does resource pattern `pattern` cover channel `name`? Wildcards replace whole `:` segments; a
 * trailing `*` spans one or more segments; `*` alone matches every ordinary channel (not `[...]`
 * qualified ones); `[*]*` matches everything.
 */
export function resourceMatches(pattern: string, name: string): boolean {
  if (pattern === '[*]*') return true
  if (pattern === name) return true
  if (name.startsWith('[') && !pattern.startsWith('[')) return false
  const p = pattern.split(':')
  const n = name.split(':')
  for (let i = 0; i < p.length; i++) {
    const seg = p[i]!
    if (seg === '*') {
      if (i === p.length - 1) return n.length > i
      if (i >= n.length) return false
      continue
    }
    if (i >= n.length || seg !== n[i]) return false
  }
  return p.length === n.length
}

const intersectOps = (a: string[], b: string[]): string[] => {
  if (a.includes('*')) return [...b]
  if (b.includes('*')) return [...a]
  return a.filter((op) => b.includes(op))
}

/**
 * Intersection of a key's capability with a requested one: for each requested resource, the
 * operations the key also grants on it (narrowing to the key's resource when the request is
 * broader). Returns undefined when nothing is left.
 */
export function intersectCapability(key: Capability, requested: Capability): Capability | undefined {
  const out: Capability = {}
  const add = (resource: string, ops: string[]) => {
    if (ops.length === 0) return
    const merged = new Set([...(out[resource] ?? []), ...ops])
    out[resource] = merged.has('*') ? ['*'] : [...merged]
  }
  for (const [reqRes, reqOps] of Object.entries(requested)) {
    for (const [keyRes, keyOps] of Object.entries(key)) {
      if (resourceMatches(keyRes, reqRes)) add(reqRes, intersectOps(keyOps, reqOps))
      else if (resourceMatches(reqRes, keyRes)) add(keyRes, intersectOps(keyOps, reqOps))
    }
  }
  return Object.keys(out).length ? out : undefined
}

/** A compiled capability: answers "may this principal do `op` on `channel`?" with a small cache. */
export class CapabilityMatcher {
  private readonly entries: Array<[string, Set<string> | '*']>
  private readonly cache = new Map<string, Map<string, boolean>>()
  private cached = 0

  constructor(readonly capability: Capability) {
    this.entries = Object.entries(capability).map(([r, ops]) => [r, ops.includes('*') ? '*' : new Set(ops)])
  }

  allows(channel: string, op: string): boolean {
    let byChannel = this.cache.get(op)
    if (!byChannel) this.cache.set(op, (byChannel = new Map()))
    let hit = byChannel.get(channel)
    if (hit !== undefined) return hit
    const name = authName(channel)
    hit = false
    for (const [pattern, ops] of this.entries) {
      if ((ops === '*' || ops.has(op)) && resourceMatches(pattern, name)) {
        hit = true
        break
      }
    }
    if (++this.cached > 4096) {
      this.cache.clear()
      this.cached = 0
    }
    byChannel.set(channel, hit)
    return hit
  }

  /** Whether `op` is granted on any resource (for operations not tied to one channel, e.g. stats). */
  allowsAnywhere(op: string, resource = '*'): boolean {
    return this.entries.some(
      ([pattern, ops]) =>
        (ops === '*' || ops.has(op)) &&
        (pattern === '[*]*' || pattern === resource || resourceMatches(pattern, resource)),
    )
  }
}
