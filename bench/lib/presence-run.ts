/**
 * One presence run (the presence scenario) on a deployment: members enter on the publishing node,
 * the observer and the new attachers are on the subscribing node, each side in its own process
 * (bench/presence-agent.ts). See scenarios/presence.ts for what is measured and checked.
 */
import { resolve } from 'node:path'
import type { Where } from '../presence-agent'
import { startAgent } from './agent'
import { cpuSeconds } from './cpu'
import { fmt } from './delivery-checks'
import type { Backend, Deployment } from './deployment'
import type { Check, RunOptions } from './scenario'

const SCRIPT = resolve(import.meta.dir, '../presence-agent.ts')
const CHANNEL = 'presence-bench'

export interface Run {
  backend: Backend
  members: number
  connectMs: number
  /** First ENTER sent → last ACK, and → the observer's last ENTER event (ms). */
  enterAckMs: number
  enterSeenMs: number
  /** Gateway CPU (all nodes and Redis) per enter while entering, µs. */
  enterCpuUs: number
  attaches: Array<{ attachedMs: number; syncMs: number; frames: number; bytes: number }>
  /** CPU of the attachers' node per attach (connect, attach with SYNC, close), ms. */
  syncCpuMs: number
  officialGetMs: number
}

export type AttachResult = {
  hasPresence: boolean
  attachedMs: number
  syncMs: number
  frames: number
  bytes: number
  members: number
  distinct: number
  wrong: number
  wrongSample: unknown[]
  faults: number
}

export async function presenceRun(
  o: RunOptions,
  d: Deployment,
  count: number,
  attachers: number,
  checks: Check[],
  notes: string[],
): Promise<Run> {
  const label = `presence (${d.backend})`
  const on = (base: string): Where => ({ base, key: d.key, channel: CHANNEL })
  const membersAgent = startAgent(`presence-members-${d.backend}`, SCRIPT, {
    logDir: o.outDir,
    fdLimit: count + 1024,
    cpuProfile: o.profile,
  })
  const watcher = startAgent(`presence-attachers-${d.backend}`, SCRIPT, { logDir: o.outDir, cpuProfile: o.profile })
  try {
    const con = await membersAgent.call<{ connected: number; failed: number; ms: number; errorSamples: string[] }>(
      'connectMembers',
      { ...on(d.publishTo.base), count, concurrency: 100 },
      180_000,
    )
    checks.push({
      name: `${label}: every member connected and attached`,
      ok: con.connected === count,
      detail: `${fmt(con.connected)} of ${fmt(count)} in ${fmt(con.ms)} ms${samples(con.errorSamples)}`,
    })
    if (con.connected !== count) throw new Error(`members did not connect: ${checks.at(-1)!.detail}`)
    await watcher.call('observe', on(d.subscribeTo.base))

    const cpu0 = d.cpuSeconds()
    const en = await membersAgent.call<{
      entered: number
      failed: number
      firstSentUs: number
      lastAckUs: number
      faults: number
      lost: number
      errorSamples: string[]
    }>('enter', { channel: CHANNEL }, 180_000)
    const seen = await watcher.call<{
      distinct: number
      duplicates: number
      otherEvents: number
      lastEnterUs: number
      faults: number
      errorSamples: string[]
    }>('observed', { count, timeoutMs: 60_000 }, 90_000)
    const enterCpu = d.cpuSeconds() - cpu0
    checks.push(
      {
        name: `${label}: every enter ACKed`,
        ok: en.entered === count && en.faults === 0 && en.lost === 0,
        detail: `${fmt(en.entered)} of ${fmt(count)} ACKed, ${en.failed} refused, protocol faults ${en.faults}, members dropped ${en.lost}${samples(en.errorSamples)}`,
      },
      {
        name: `${label}: the observer saw every member enter once`,
        ok: seen.distinct === count && seen.duplicates === 0 && seen.otherEvents === 0 && seen.faults === 0,
        detail: `${fmt(seen.distinct)} of ${fmt(count)} members entered, ${seen.duplicates} duplicate and ${seen.otherEvents} other events, protocol faults ${seen.faults}${samples(seen.errorSamples)}`,
      },
      await restCheck(label, d, count),
    )

    const attaches: AttachResult[] = []
    const nodeB = d.subscribeTo.pid
    const cpuB0 = cpuSeconds(nodeB) ?? 0
    for (let r = 0; r < attachers; r++)
      attaches.push(
        await watcher.call<AttachResult>('attach', {
          ...on(d.subscribeTo.base),
          clientId: `attacher-${r}`,
          members: count,
        }),
      )
    const syncCpuMs = (((cpuSeconds(nodeB) ?? 0) - cpuB0) * 1000) / attachers
    const bad = attaches.filter(
      (a) => !a.hasPresence || a.members !== count || a.distinct !== count || a.wrong > 0 || a.faults > 0,
    )
    checks.push({
      name: `${label}: every new attacher got every member once (ATTACHED with HAS_PRESENCE, then SYNC)`,
      ok: bad.length === 0,
      detail:
        `${attachers - bad.length} of ${attachers} attachers complete (${fmt(count)} members each, PRESENT, their clientId and data)` +
        (bad.length ? `; e.g. ${JSON.stringify(bad[0])}` : ''),
    })

    const official = await watcher.call<{ ms: number; members: number; distinct: number }>('officialGet', {
      ...on(d.subscribeTo.base),
      port: Number(new URL(d.subscribeTo.base).port),
    })
    checks.push({
      name: `${label}: the official client's presence.get() returned every member`,
      ok: official.members === count && official.distinct === count,
      detail: `${fmt(official.members)} members (${fmt(official.distinct)} distinct) in ${official.ms.toFixed(1)} ms`,
    })
    if (attachers < 5) notes.push(`${label}: ${attachers} attacher(s) only: percentiles of the SYNC time are rough`)
    await membersAgent.call('closeMembers', undefined, 60_000)
    return {
      backend: d.backend,
      members: count,
      connectMs: con.ms,
      enterAckMs: (en.lastAckUs - en.firstSentUs) / 1000,
      enterSeenMs: (seen.lastEnterUs - en.firstSentUs) / 1000,
      enterCpuUs: (enterCpu * 1e6) / count,
      attaches,
      syncCpuMs,
      officialGetMs: official.ms,
    }
  } finally {
    await Promise.all([membersAgent.stop(), watcher.stop()])
  }
}

const samples = (s: string[]) => (s.length ? `; e.g. ${s.slice(0, 3).join(' | ')}` : '')

/** The REST presence read (on the attachers' node) counts every member. */
async function restCheck(label: string, d: Deployment, count: number): Promise<Check> {
  const auth = `Basic ${Buffer.from(d.key).toString('base64')}`
  let n = 0
  let query = 'limit=1000'
  for (;;) {
    const res = await fetch(`${d.subscribeTo.base}/channels/${CHANNEL}/presence?${query}`, {
      headers: { Authorization: auth },
    })
    if (res.status !== 200) return { name: `${label}: REST presence`, ok: false, detail: `answered ${res.status}` }
    n += ((await res.json()) as unknown[]).length
    const next = /<\.\/presence\?([^>]*)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')
    if (!next) break
    query = next[1]!
  }
  return {
    name: `${label}: the REST presence read counts every member`,
    ok: n === count,
    detail: `${fmt(n)} members present of ${fmt(count)}${d.backend === 'redis' ? ' (read on node B)' : ''}`,
  }
}
