import { GatewayError } from '../../errors'
import { utf8Length } from '../../lib/encoding'
import type { ReactionKind, ReactionRecord } from './ports'

/**
 * Message reactions, as the hosted Chat API has them: `unique` (one reaction per client per
 * message, a new one replaces the old), `distinct` (each name at most once per client) and
 * `multiple` (any number, counted). Summaries are computed from the records on every read.
 */
export interface ClientIdList {
  total: number
  clientIds: string[]
  clipped: boolean
}
export interface ClientIdCounts {
  total: number
  clientIds: Record<string, number>
  totalUnidentified: number
  clipped: boolean
  totalClientIds: number
}

export interface ReactionSummary {
  unique: Record<string, ClientIdList>
  distinct: Record<string, ClientIdList>
  multiple: Record<string, ClientIdCounts>
}

/** Per reaction name, whatever its kind: how many and who (the spec's per-type summary). */
export type NameSummary = Record<string, { count: number; clientIds: string[] }>

export const MAX_REACTION_COUNT = 1000
export const MAX_REACTION_NAME = 255
/** A reaction's metadata, as JSON; every record keeps its own. */
export const MAX_REACTION_METADATA_BYTES = 4096

const KINDS: Record<string, ReactionKind> = {
  unique: 'unique',
  distinct: 'distinct',
  multiple: 'multiple',
  // the annotation types some client versions send
  'reaction:unique.v1': 'unique',
  'reaction:distinct.v1': 'distinct',
  'reaction:multiple.v1': 'multiple',
}

const invalid = (why: string) => new GatewayError(40001, `Invalid reaction: ${why}`)

export function parseKind(v: unknown, def?: ReactionKind): ReactionKind {
  if ((v === undefined || v === null) && def) return def
  const kind = typeof v === 'string' ? KINDS[v] : undefined
  if (!kind) throw invalid('type must be unique, distinct or multiple')
  return kind
}

export function parseName(v: unknown): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_REACTION_NAME)
    throw invalid(`name must be a string of 1 to ${MAX_REACTION_NAME} characters`)
  return v
}

/** Count of an added reaction: only `multiple` takes one (default 1). */
export function parseCount(kind: ReactionKind, v: unknown): number {
  if (v === undefined || v === null) return 1
  if (kind !== 'multiple') {
    if (v === 1) return 1
    throw invalid('count is only allowed for multiple reactions')
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_REACTION_COUNT)
    throw invalid(`count must be an integer from 1 to ${MAX_REACTION_COUNT}`)
  return v
}

export function checkReactionMetadata(v: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (v !== undefined && utf8Length(JSON.stringify(v)) > MAX_REACTION_METADATA_BYTES)
    throw invalid(`metadata must be at most ${MAX_REACTION_METADATA_BYTES} bytes as JSON`)
  return v
}

/**
 * The per-kind summary of a message's records. `forClientId` (client-reactions): only the names
 * that client contributed to, each with its room-wide total and the client lists trimmed to it.
 */
export function summarize(records: ReactionRecord[], forClientId?: string): ReactionSummary {
  const out: ReactionSummary = { unique: {}, distinct: {}, multiple: {} }
  const shown = (cid: string) => forClientId === undefined || cid === forClientId
  const own =
    forClientId === undefined
      ? undefined
      : new Set(records.filter((r) => r.clientId === forClientId).map((r) => `${r.kind}\u0000${r.name}`))
  for (const r of sorted(records)) {
    if (own && !own.has(`${r.kind}\u0000${r.name}`)) continue
    if (r.kind === 'multiple') {
      const e = (out.multiple[r.name] ??= {
        total: 0,
        clientIds: {},
        totalUnidentified: 0,
        clipped: false,
        totalClientIds: 0,
      })
      e.total += r.count
      e.totalClientIds++
      if (shown(r.clientId)) e.clientIds[r.clientId] = r.count
    } else {
      const e = (out[r.kind][r.name] ??= { total: 0, clientIds: [], clipped: false })
      e.total++
      if (shown(r.clientId)) e.clientIds.push(r.clientId)
    }
  }
  return out
}

export function summarizeByName(records: ReactionRecord[]): NameSummary {
  const out: NameSummary = {}
  for (const r of sorted(records)) {
    const e = (out[r.name] ??= { count: 0, clientIds: [] })
    e.count += r.count
    if (!e.clientIds.includes(r.clientId)) e.clientIds.push(r.clientId)
  }
  return out
}

/** Oldest first (then by client), so summaries list clients in the order they reacted. */
export const sorted = (records: ReactionRecord[]): ReactionRecord[] =>
  [...records].sort(
    (a, b) =>
      a.timestamp - b.timestamp ||
      (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0) ||
      (a.name < b.name ? -1 : 1),
  )
