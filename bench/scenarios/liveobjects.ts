/**
 * LiveObjects (the official client's plugin protocol): operations applied and delivered, and the
 * sync of a large tree.
 *
 *   1. `--subscribers` (default 100) raw realtime connections attach one channel in OBJECT_SUBSCRIBE
 *      mode (JSON) and count the operations delivered to them. `--publishers` connections (default
 *      4; the first entry of the list) send COUNTER_INC operations on one counter, each keeping up to
 *      50 unacknowledged, for `--seconds`. Timed: operations ACKed per second (applied and durable),
 *      and deliveries per second until the last subscriber has the last one. Every operation must be
 *      delivered to every subscriber once, and the counter must read the number applied.
 *   2. 10,000 objects (`--members` overrides) are created over REST in batches of 100 (one message
 *      each), set in root; then `--attachers` (default 5) new connections attach one after the
 *      other, each timed from ATTACH to the last OBJECT_SYNC page, which must hold every object.
 *
 * With --redis the same follows on two nodes of a redis-server: publishers and REST on node A,
 * subscribers and attachers on node B.
 */
import { range } from '../lib/alternation'
import { fmt } from '../lib/delivery-checks'
import { backendsOf, startDeployment, type Deployment } from '../lib/deployment'
import { distribution } from '../lib/percentiles'
import type { Check, Headline, RunOptions, ScenarioResult } from '../lib/scenario'

const OBJECT_SUBSCRIBE = 1 << 24
const OBJECT_PUBLISH = 1 << 25
const WINDOW = 50

interface Conn {
  ws: WebSocket
  on(f: (pm: any) => void): void
  send(pm: object): void
}

async function connect(base: string, key: string): Promise<Conn> {
  const url = `${base.replace('http', 'ws')}/?key=${encodeURIComponent(key)}&format=json&v=6&heartbeats=true`
  const ws = new WebSocket(url)
  const handlers: Array<(pm: any) => void> = []
  ws.onmessage = (e) => {
    const pm = JSON.parse(String(e.data))
    for (const h of handlers) h(pm)
  }
  const c: Conn = { ws, on: (f) => handlers.push(f), send: (pm) => ws.send(JSON.stringify(pm)) }
  await new Promise<void>((resolve, reject) => {
    c.on((pm) => (pm.action === 4 ? resolve() : pm.action === 9 ? reject(new Error(JSON.stringify(pm))) : undefined))
    ws.onerror = () => reject(new Error('socket error'))
  })
  return c
}

/** Attaches for objects and resolves with the sync's objects and its size once its last page is in. */
function attachAndSync(c: Conn, channel: string, flags: number): Promise<{ objects: number; bytes: number }> {
  return new Promise((resolve) => {
    let objects = 0
    let bytes = 0
    c.on((pm) => {
      if (pm.action !== 20 || pm.channel !== channel) return
      objects += pm.state.length
      bytes += JSON.stringify(pm).length
      if (/^[\w-]+:$/.test(pm.channelSerial)) resolve({ objects, bytes })
    })
    c.send({ action: 10, channel, flags })
  })
}

async function rest(base: string, key: string, channel: string, body: unknown): Promise<any> {
  const r = await fetch(`${base}/channels/${encodeURIComponent(channel)}/object`, {
    method: 'POST',
    headers: { authorization: `Basic ${btoa(key)}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  if (r.status !== 200) throw new Error(`REST publish: ${r.status} ${await r.text()}`)
  return r.json()
}

interface Run {
  backend: string
  applied: number
  appliedPerSec: number
  deliveredPerSec: number
  subscribers: number
  syncObjects: number
  syncMs: number[]
  syncBytes: number
}

async function run(o: RunOptions, d: Deployment, checks: Check[]): Promise<Run> {
  const subscribers = o.subscribers ?? (o.short ? 10 : 100)
  const publishers = o.publishers?.[0] ?? 4
  const objectCount = o.members ?? (o.short ? 1000 : 10_000)
  const attachers = o.attachers ?? (o.short ? 2 : 5)
  const seconds = o.short ? 1 : o.seconds
  const channel = `bench-lo-${Date.now()}`
  const pubBase = d.publishTo.base
  const subBase = d.subscribeTo.base

  // 1. operations applied and delivered
  const counter = (await rest(pubBase, d.key, channel, { path: 'n', counterCreate: { count: 0 } })).objectIds[0]
  const subs = await Promise.all(Array.from({ length: subscribers }, () => connect(subBase, d.key)))
  const got = new Array<number>(subscribers).fill(0)
  let lastDelivery = 0
  subs.forEach((c, i) =>
    c.on((pm) => {
      if (pm.action !== 19) return
      got[i] += pm.state.filter((m: any) => m.operation.action === 4).length
      lastDelivery = performance.now()
    }),
  )
  await Promise.all(subs.map((c) => attachAndSync(c, channel, OBJECT_SUBSCRIBE)))
  const pubs = await Promise.all(Array.from({ length: publishers }, () => connect(pubBase, d.key)))
  await Promise.all(pubs.map((c) => attachAndSync(c, channel, OBJECT_SUBSCRIBE | OBJECT_PUBLISH)))
  let acked = 0
  let nacked = 0
  const start = performance.now()
  const until = start + seconds * 1000
  let lastAck = start
  await Promise.all(
    pubs.map(
      (c) =>
        new Promise<void>((resolve) => {
          let serial = 0
          let inflight = 0
          const op = { action: 4, objectId: counter, counterInc: { number: 1 } }
          const pump = () => {
            while (inflight < WINDOW && performance.now() < until) {
              c.send({ action: 19, channel, msgSerial: serial++, state: [{ operation: op }] })
              inflight++
            }
            if (inflight === 0) resolve()
          }
          c.on((pm) => {
            if (pm.action === 1 || pm.action === 2) {
              inflight -= pm.count
              if (pm.action === 1) acked += pm.count
              else nacked += pm.count
              lastAck = performance.now()
              pump()
            }
          })
          pump()
        }),
    ),
  )
  const applySecs = (lastAck - start) / 1000
  const deadline = Date.now() + 30_000
  while (got.some((n) => n < acked) && Date.now() < deadline) await Bun.sleep(20)
  const deliverSecs = (lastDelivery - start) / 1000
  const value = await (
    await fetch(`${pubBase}/channels/${encodeURIComponent(channel)}/object?path=n`, {
      headers: { authorization: `Basic ${btoa(d.key)}` },
    })
  ).json()
  checks.push(
    {
      name: `${d.backend}: every operation ACKed`,
      ok: nacked === 0 && acked > 0,
      detail: `${acked} ACKed, ${nacked} NACKed`,
    },
    {
      name: `${d.backend}: every subscriber got every operation once`,
      ok: got.every((n) => n === acked),
      detail: `${range(got, String)} of ${acked}`,
    },
    { name: `${d.backend}: the counter reads what was applied`, ok: value === acked, detail: `${value} vs ${acked}` },
  )
  for (const c of [...subs, ...pubs]) c.ws.close()

  // 2. sync of a large tree
  const big = `${channel}-sync`
  for (let made = 0; made < objectCount; made += 100) {
    const n = Math.min(100, objectCount - made)
    await rest(
      pubBase,
      d.key,
      big,
      Array.from({ length: n }, (_, i) => ({ path: `c${made + i}`, counterCreate: { count: made + i } })),
    )
  }
  const syncMs: number[] = []
  let syncBytes = 0
  let syncObjects = 0
  for (let i = 0; i < attachers; i++) {
    const c = await connect(subBase, d.key)
    const t0 = performance.now()
    const s = await attachAndSync(c, big, OBJECT_SUBSCRIBE)
    syncMs.push(performance.now() - t0)
    syncBytes = s.bytes
    syncObjects = s.objects
    c.ws.close()
  }
  checks.push({
    name: `${d.backend}: a new attacher syncs every object`,
    ok: syncObjects === objectCount + 1,
    detail: `${syncObjects} objects (root and ${objectCount})`,
  })
  return {
    backend: d.label,
    applied: acked,
    appliedPerSec: acked / applySecs,
    deliveredPerSec: (acked * subscribers) / deliverSecs,
    subscribers,
    syncObjects,
    syncMs,
    syncBytes,
  }
}

export async function liveObjectsScenario(o: RunOptions): Promise<ScenarioResult> {
  const runs: Run[] = []
  const checks: Check[] = []
  for (const backend of backendsOf(o)) {
    console.log(`liveobjects (${backend}): operations applied and delivered, then the sync of a large tree …`)
    const d = await startDeployment(backend, {
      logDir: o.outDir,
      name: `gateway-liveobjects-${backend}`,
      fdLimit: 4096,
      cpuProfile: o.profile,
      env: { RATE_LIMITS: 'off' },
    })
    try {
      runs.push(await run(o, d, checks))
    } finally {
      await d.stop()
    }
  }
  const headlines: Headline[] = runs.flatMap((r) => [
    { name: `operations applied (ACKed) per second (${r.backend})`, value: r.appliedPerSec, unit: '/s' },
    {
      name: `operations delivered per second to ${r.subscribers} subscribers (${r.backend})`,
      value: r.deliveredPerSec,
      unit: '/s',
    },
    {
      name: `new attacher: ATTACH → last OBJECT_SYNC page of ${fmt(r.syncObjects)} objects, p50 (${r.backend}; ${range(
        r.syncMs,
        (x) => x.toFixed(0),
      )} ms)`,
      value: distribution(r.syncMs).p50,
      unit: 'ms',
    },
    { name: `OBJECT_SYNC size (${r.backend})`, value: r.syncBytes, unit: 'bytes (JSON)' },
  ])
  return {
    scenario: 'liveobjects',
    description:
      'LiveObjects: COUNTER_INC operations from realtime publishers (50 in flight each), ACKed and delivered to object subscribers; then new attachers syncing a tree of 10,000 objects',
    load: `${runs[0]?.subscribers ?? 0} subscribers, ${o.publishers?.[0] ?? 4} publishers`,
    measurements: [],
    headlines,
    details: runs,
    ratios: {},
    checks,
  }
}
