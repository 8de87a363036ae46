import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { formatSerial } from '../../src/core/model/serial'
import {
  applyOps,
  emptyRoot,
  recordOf,
  type ApplyTarget,
  type LiveHead,
  type LiveObjectRecord,
  type StoredEntry,
} from '../../src/core/objects/live-state'
import type { LiveLimits, LiveObjectStore, Operation } from '../../src/core/objects/ports'
import type { MessageDraft } from '../../src/core/types'
import { GatewayError } from '../../src/errors'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { CASES, LIMITS, type ApplyCase } from './live-apply-cases'

// The LiveObjects apply rules held to one table of cases (live-apply-cases.ts), run against the
// TypeScript rules (core/objects/live-state.ts `applyOps`, on a store of plain maps) and against the
// LiveObjectStore port of whichever backend TEST_BACKEND names: the embedded store applies them in
// TypeScript, Redis and Redis Cluster in Lua (backend/redis/lua/live-objects.ts). `npm test` runs
// this file on all three.

/** What a case's run gives: the serials appended, in order, and the objects a sync reads, root first. */
interface Applier {
  /** The batch's serials, or throws its refusal. */
  publish(ops: Operation[]): Promise<string[]>
  snapshot(): Promise<LiveObjectRecord[]>
}

/** The TypeScript rules on a store of maps, as the backends keep it (heads, entries per object, the byte total). */
function inTypeScript(limits: LiveLimits): Applier {
  const heads = new Map<string, LiveHead>()
  const entries = new Map<string, Map<string, StoredEntry>>()
  let bytes = 0
  let ms = 1_000_000
  const target: ApplyTarget = {
    head: (id) => structuredClone(heads.get(id)),
    entry: (id, key) => structuredClone(entries.get(id)?.get(key)),
    count: () => [...heads.keys()].filter((k) => k !== 'root').length,
    bytes: () => bytes,
  }
  return {
    async publish(ops) {
      const serials = ops.map((_, i) => formatSerial(ms, i))
      const c = applyOps(target, ops, serials, ms++, limits)
      for (const h of c.heads) heads.set(h.objectId, h)
      for (const id of c.cleared) entries.delete(id)
      for (const { objectId, key, entry } of c.entries) {
        if (!entries.has(objectId)) entries.set(objectId, new Map())
        entries.get(objectId)!.set(key, entry)
      }
      bytes += c.bytes
      return serials
    },
    async snapshot() {
      const recs = [...heads.values()].map((h) => recordOf(h, entries.get(h.objectId) ?? []))
      const root = recs.findIndex((r) => r.objectId === 'root')
      return [root >= 0 ? recs.splice(root, 1)[0]! : emptyRoot(), ...recs]
    },
  }
}

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
})
afterAll(async () => {
  await gw.close()
})

let n = 0
/** The backend's LiveObjectStore, on a channel of the case's own. */
function inStore(store: LiveObjectStore, limits: LiveLimits): Applier {
  const channel = `live-apply-${Date.now()}-${n++}`
  let batch = 0
  return {
    publish(ops) {
      const b = batch++
      const drafts: MessageDraft[] = ops.map((op, i) => ({
        id: `apply:${b}:${i}`,
        kind: 'object',
        data: JSON.stringify(op),
      }))
      return store.publish('contract-app', channel, { ops, drafts }, { persisted: false, limits })
    },
    snapshot: () => store.snapshot('contract-app', channel),
  }
}

/**
 * Runs a case: each batch applied or refused as the table says; the objects as the table writes
 * them (serials `#n`, times `T`), by id.
 */
async function run(c: ApplyCase, a: Applier) {
  const serials: string[] = []
  for (const b of c.batches) {
    if (Array.isArray(b)) {
      serials.push(...(await a.publish(b)))
      continue
    }
    const refusal = await a.publish(b.ops).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(refusal).toBeInstanceOf(GatewayError)
    expect({ code: (refusal as GatewayError).code, message: (refusal as GatewayError).message }).toEqual({
      code: b.refused as never,
      message: b.message,
    })
  }
  const named = new Map(serials.map((s, i) => [s, `#${i}`]))
  const written = (v: unknown, key?: string): unknown => {
    if (typeof v === 'string') return named.get(v) ?? v
    if (typeof v === 'number' && (key === 'tombstonedAt' || key === 'serialTimestamp')) return v > 0 ? 'T' : v
    if (Array.isArray(v)) return v.map((x) => written(x))
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, written(x, k)]))
    return v
  }
  const recs = await a.snapshot()
  expect(recs[0]!.objectId).toBe('root')
  return Object.fromEntries(recs.map((r) => [r.objectId, written(r)]))
}

describe('LiveObjects apply cases', () => {
  for (const c of CASES) {
    const limits = { ...LIMITS, ...c.limits }
    test(`TypeScript rules: ${c.name}`, async () => {
      expect(await run(c, inTypeScript(limits))).toEqual(c.objects)
    })
    test(`the backend's store (${process.env.TEST_BACKEND ?? 'embedded'}): ${c.name}`, async () => {
      expect(await run(c, inStore(gw.backend.liveObjects, limits))).toEqual(c.objects)
    })
  }
})
