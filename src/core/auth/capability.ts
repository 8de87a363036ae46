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

/**
 * Bounds of a capability, wherever one enters (key creation and update, token requests, JWT
 * claims, sandbox keys): they keep what a capability costs to store, to carry in a token and to
 * match small. Matching a channel costs at most one step per wildcard segment (see ResourceIndex).
 */
export const MAX_CAPABILITY_RESOURCES = 1000
/** Longest resource name: a channel name's bound (MAX_CHANNEL_NAME; auth is below model in the core). */
export const MAX_RESOURCE_LENGTH = 1024
/** `:` segments of all the wildcard resources of one capability together. */
export const MAX_WILDCARD_SEGMENTS = 4096
/**
 * Steps one intersection of two capabilities may take: far above what any real pair needs (a
 * few per resource), reached only by thousands of deep wildcards that all match each other.
 */
export const MAX_INTERSECTION_STEPS = 200_000

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
  const entries = Object.entries(value as Record<string, unknown>)
  if (entries.length > MAX_CAPABILITY_RESOURCES)
    throw invalid(`more than ${MAX_CAPABILITY_RESOURCES} resources (${entries.length})`)
  const out: Capability = {}
  let wildcardSegments = 0
  for (const [resource, ops] of entries) {
    if (!resource) throw invalid('empty resource name')
    if (resource.length > MAX_RESOURCE_LENGTH)
      throw invalid(`a resource name is longer than ${MAX_RESOURCE_LENGTH} characters`)
    if (resource.includes('*')) {
      const segments = resource.split(':')
      if (segments.includes('*') && (wildcardSegments += segments.length) > MAX_WILDCARD_SEGMENTS)
        throw invalid(`its wildcard resources have more than ${MAX_WILDCARD_SEGMENTS} ":" segments in all`)
    }
    if (!Array.isArray(ops) || ops.length === 0) throw invalid(`operations of "${resource}" must be a non-empty array`)
    for (const op of ops) {
      if (typeof op !== 'string') throw invalid(`operation of "${resource}" is not a string`)
      if (op !== '*' && !OPERATIONS.has(op)) throw invalid(`unknown operation "${op.slice(0, 64)}"`)
    }
    if (ops.includes('*') && ops.length > 1)
      throw invalid(`"*" cannot be combined with other operations on "${resource}"`)
    out[resource] = [...new Set(ops as string[])]
  }
  if (entries.length === 0) throw invalid('no resources')
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
 * qualified ones); `[*]*` matches everything. (The rule ResourceIndex applies to many at once.)
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

/* Operations as bits, in sorted order (so a set of them lists sorted); `*` is every bit and STAR. */
const OP_NAMES = [...OPERATIONS].sort()
const OP_BITS = new Map(OP_NAMES.map((op, i) => [op, 1 << i]))
const STAR = 1 << OP_NAMES.length
const ALL = (STAR << 1) - 1

function opsMask(ops: readonly string[]): number {
  let m = 0
  for (const op of ops) m |= op === '*' ? ALL : (OP_BITS.get(op) ?? 0)
  return m
}

function maskOps(m: number): string[] {
  if (m & STAR) return ['*']
  return OP_NAMES.filter((_, i) => m & (1 << i))
}

/** A node of the wildcard tree: the operations of the patterns that end here or continue with a trailing `*`. */
interface PatternNode {
  next?: Map<string, PatternNode>
  /** The child along a `*` segment that is not the last. */
  any?: PatternNode
  /** Patterns whose segments end here (a name of exactly this many segments). */
  ends: number
  /** Patterns whose trailing `*` starts here (a name with at least one more segment). */
  rest: number
}

const node = (): PatternNode => ({ ends: 0, rest: 0 })

/** The child of `at` along the literal segment `seg` (made when missing). */
function literal(at: PatternNode, seg: string): PatternNode {
  const next = (at.next ??= new Map())
  let child = next.get(seg)
  if (!child) next.set(seg, (child = node()))
  return child
}

/** Counts the steps of matches against a budget (intersections); 400 past it. */
class Budget {
  constructor(public left: number) {}
  spend(n: number) {
    if ((this.left -= n) < 0)
      throw invalid(
        `its wildcard resources and the key's together need more than ${MAX_INTERSECTION_STEPS} steps to intersect`,
      )
  }
}

/**
 * The resources of a capability indexed for matching, each with its operations as a bit mask:
 * exact names in a map, `[*]*` apart, and wildcard patterns in a tree of their `:` segments (one
 * tree for ordinary names, one for `[...]` qualified ones). Matching a name walks the tree along
 * its segments and the `*` branches; every node is reached at most once (by one path), so a
 * match costs at most one step per wildcard segment of the capability and usually a few in all.
 */
class ResourceIndex {
  private readonly exact = new Map<string, number>()
  private everything = 0
  private plain?: PatternNode
  private qualified?: PatternNode

  constructor(capability: Capability) {
    for (const [resource, ops] of Object.entries(capability)) {
      const mask = opsMask(ops)
      if (resource === '[*]*') {
        this.everything |= mask
        continue
      }
      const segments = resource.split(':')
      if (!segments.includes('*')) {
        this.exact.set(resource, (this.exact.get(resource) ?? 0) | mask)
        continue
      }
      let at = resource.startsWith('[') ? (this.qualified ??= node()) : (this.plain ??= node())
      const last = segments.length - 1
      for (let i = 0; i < last; i++) at = segments[i] === '*' ? (at.any ??= node()) : literal(at, segments[i]!)
      if (segments[last] === '*') at.rest |= mask
      else literal(at, segments[last]!).ends |= mask
    }
  }

  /** The operations of every resource covering `name` (see resourceMatches), as a mask. */
  covering(name: string, budget?: Budget): number {
    const mask = this.everything | (this.exact.get(name) ?? 0)
    const root = name.charCodeAt(0) === 91 /* [ */ ? this.qualified : this.plain
    if (!root) return mask
    const segments = name.split(':')
    if (budget) budget.spend(segments.length)
    return mask | walk(root, segments, 0, budget)
  }
}

/** The operations of the patterns under `n` (reached by `d` segments) that cover the rest of `segments`. */
function walk(n: PatternNode, segments: string[], d: number, budget: Budget | undefined): number {
  if (budget) budget.spend(1)
  if (d === segments.length) return n.ends
  let mask = n.rest
  const child = n.next?.get(segments[d]!)
  if (child) mask |= walk(child, segments, d + 1, budget)
  if (n.any) mask |= walk(n.any, segments, d + 1, budget)
  return mask
}

/**
 * Intersection of a key's capability with a requested one: for each requested resource, the
 * operations the key also grants on it (narrowing to the key's resource when the request is
 * broader). Returns undefined when nothing is left. Linear: each resource of either side is
 * matched once against the other side's index.
 */
export function intersectCapability(key: Capability, requested: Capability): Capability | undefined {
  const keys = new ResourceIndex(key)
  const wanted = new ResourceIndex(requested)
  const budget = new Budget(MAX_INTERSECTION_STEPS)
  const out = new Map<string, number>()
  const add = (resource: string, mask: number) => {
    if (mask & ALL) out.set(resource, (out.get(resource) ?? 0) | mask)
  }
  // a requested resource within key resources: what those grant of what it asks
  for (const [resource, ops] of Object.entries(requested)) add(resource, opsMask(ops) & keys.covering(resource, budget))
  // a key resource within broader requested ones: narrowed to the key's resource
  for (const [resource, ops] of Object.entries(key)) add(resource, opsMask(ops) & wanted.covering(resource, budget))
  if (out.size === 0) return undefined
  const cap: Capability = {}
  for (const [resource, mask] of out) cap[resource] = maskOps(mask)
  return cap
}

/** A compiled capability: answers "may this principal do `op` on `channel`?" with a small cache. */
export class CapabilityMatcher {
  private readonly index: ResourceIndex
  private readonly cache = new Map<string, Map<string, boolean>>()
  private cached = 0

  constructor(readonly capability: Capability) {
    this.index = new ResourceIndex(capability)
  }

  private grants(mask: number, op: string): boolean {
    return (mask & STAR) !== 0 || (mask & (OP_BITS.get(op) ?? 0)) !== 0
  }

  allows(channel: string, op: string): boolean {
    let byChannel = this.cache.get(op)
    if (!byChannel) this.cache.set(op, (byChannel = new Map()))
    let hit = byChannel.get(channel)
    if (hit !== undefined) return hit
    hit = this.grants(this.index.covering(authName(channel)), op)
    if (++this.cached > 4096) {
      this.cache.clear()
      this.cached = 0
    }
    byChannel.set(channel, hit)
    return hit
  }

  /** Whether `op` is granted on any resource (for operations not tied to one channel, e.g. stats). */
  allowsAnywhere(op: string, resource = '*'): boolean {
    return this.grants(this.index.covering(resource), op)
  }
}
