/**
 * Presence: M members (default 1,000) enter one channel, then new attachers get them all.
 *
 *   1. M realtime connections (one process, each its own clientId, attached in PRESENCE mode
 *      only) enter at once; an observer connection (another process) receives presence. Timed:
 *      first ENTER sent → last ACK (enters/s), and → the observer's last ENTER event. Every enter
 *      must be ACKed, seen once by the observer, and counted by the REST presence read.
 *   2. `--attachers` (default 20) new connections attach one after the other, each timed from
 *      ATTACH to ATTACHED and to the last SYNC page; the SYNC's frames and bytes are its cost on
 *      the wire, the gateway's CPU over the attaches its cost on the node. Each must get every
 *      member exactly once, PRESENT, with its clientId and data.
 *   3. The official client's `presence.get()` on a connected client (it attaches and waits for the
 *      SYNC), timed once, must return every member.
 *
 * With --redis the same follows on a Redis cluster: members enter on node A, the observer and
 * attachers are on node B.
 */
import { mean, range } from '../lib/alternation'
import { fmt } from '../lib/delivery-checks'
import { backendsOf, startDeployment } from '../lib/deployment'
import { distribution } from '../lib/percentiles'
import { presenceRun, type Run } from '../lib/presence-run'
import type { Chart, Check, Headline, RunOptions, ScenarioResult } from '../lib/scenario'

export async function presenceScenario(o: RunOptions): Promise<ScenarioResult> {
  const count = o.members ?? (o.short ? 200 : 1000)
  const attachers = o.attachers ?? (o.short ? 3 : 20)
  const runs: Run[] = []
  const checks: Check[] = []
  const notes: string[] = []
  for (const backend of backendsOf(o)) {
    console.log(
      `presence (${backend}): ${fmt(count)} members enter, then ${attachers} new attachers get them by SYNC, then the official client's get() …`,
    )
    const d = await startDeployment(backend, {
      logDir: o.outDir,
      name: `gateway-presence-${backend}`,
      fdLimit: count + 1024,
      cpuProfile: o.profile,
    })
    try {
      runs.push(await presenceRun(o, d, count, attachers, checks, notes))
    } finally {
      await d.stop()
    }
  }

  const headlines: Headline[] = runs.flatMap((r) => {
    const sync = distribution(r.attaches.map((a) => a.syncMs))
    return [
      {
        name: `enters per second (${r.backend}; ${fmt(r.members)} members, ACKed in ${fmt(r.enterAckMs)} ms)`,
        value: (r.members / r.enterAckMs) * 1000,
        unit: '/s',
      },
      { name: `first ENTER sent → the observer saw the last (${r.backend})`, value: r.enterSeenMs, unit: 'ms' },
      {
        name: `new attacher: ATTACH → last SYNC page, p50 (${r.backend}; ${range(
          r.attaches.map((a) => a.syncMs),
          (x) => x.toFixed(1),
        )} ms)`,
        value: sync.p50,
        unit: 'ms',
      },
      {
        name: `SYNC size (${r.backend})`,
        value: mean(r.attaches.map((a) => a.bytes)),
        unit: `bytes in ${mean(r.attaches.map((a) => a.frames))} frames`,
      },
      {
        name: `gateway CPU per new attacher (${r.backend}; connect, ATTACH with SYNC, CLOSE)`,
        value: r.syncCpuMs,
        unit: 'ms',
      },
      {
        name: `official client: presence.get() on a connected client (${r.backend})`,
        value: r.officialGetMs,
        unit: 'ms',
      },
    ]
  })
  const charts: Chart[] = [
    {
      file: 'sync.svg',
      title: 'New attacher: ATTACH → ATTACHED and → last SYNC page (ms), each attach',
      kind: 'line',
      xLabel: 'attacher',
      yLabel: 'ms',
      series: runs.flatMap((r) => [
        {
          name: `ATTACHED (${r.backend})`,
          points: r.attaches.map((a, i) => [i + 1, a.attachedMs] as [number, number]),
        },
        {
          name: `last SYNC page (${r.backend})`,
          points: r.attaches.map((a, i) => [i + 1, a.syncMs] as [number, number]),
          dashed: r.backend === 'redis',
        },
      ]),
    },
  ]
  return {
    scenario: 'presence',
    description:
      `Presence on one channel: ${fmt(count)} members (realtime connections, one clientId each, attached in PRESENCE mode) enter at once while an ` +
      'observer receives presence; then new attachers, one after the other, each timed from ATTACH to its last SYNC page; then the official ' +
      "client's presence.get() once. Members and attachers in separate processes." +
      (o.redis ? ' Repeated on Redis (two gateway nodes): members on node A, observer and attachers on node B.' : ''),
    load: `${fmt(count)} members, ${attachers} attachers per backend`,
    measurements: [],
    tables: [
      {
        title: 'Runs',
        head: [
          'backend',
          'members',
          'connect + attach all',
          'enter: last ACK',
          'enter: observer saw all',
          'gateway CPU per enter',
          'ATTACHED p50',
          'last SYNC p50 / max',
          'SYNC frames / bytes',
          'gateway CPU per attacher',
          'official get()',
        ],
        rows: runs.map((r) => {
          const sync = distribution(r.attaches.map((a) => a.syncMs))
          const att = distribution(r.attaches.map((a) => a.attachedMs))
          return [
            r.backend,
            fmt(r.members),
            `${fmt(r.connectMs)} ms`,
            `${fmt(r.enterAckMs)} ms`,
            `${fmt(r.enterSeenMs)} ms`,
            `${r.enterCpuUs.toFixed(0)} µs`,
            `${att.p50.toFixed(2)} ms`,
            `${sync.p50.toFixed(2)} / ${sync.max.toFixed(2)} ms`,
            `${mean(r.attaches.map((a) => a.frames))} / ${fmt(mean(r.attaches.map((a) => a.bytes)))}`,
            `${r.syncCpuMs.toFixed(2)} ms`,
            `${r.officialGetMs.toFixed(1)} ms`,
          ]
        }),
      },
    ],
    headlines,
    ratios: {},
    checks,
    notes,
    charts,
    details: { members: count, attachers, runs },
  }
}
