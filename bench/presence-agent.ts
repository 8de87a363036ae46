/**
 * Presence process of the presence scenario (an agent, see lib/agent.ts), run twice: one holds
 * the members (many realtime connections, each its own clientId, attached in PRESENCE mode only,
 * entering when told), the other the observer (a connection receiving presence, counting each
 * member's ENTER once) and the new attachers (each times ATTACH → ATTACHED → the last SYNC page,
 * and checks the member list it got). Also times the official client's `presence.get()` once.
 * Times that cross processes are wall-clock µs (`wallMicros`).
 */
import Ably from 'ably'
import { serveAgent } from './lib/agent'
import { Flag, RealtimeClient, type PresenceEntry, type ServerMessage } from './lib/realtime-client'
import { wallMicros } from './lib/sequence-payload'

export interface Where {
  /** http://host:port of the gateway node. */
  base: string
  key: string
  channel: string
}

export const memberId = (i: number) => `member-${i}`
export const memberData = (i: number) => `data of member ${i}`

const members: RealtimeClient[] = []
const errorSamples: string[] = []
const sample = (msg: string) => {
  if (errorSamples.length < 8) errorSamples.push(msg)
}
let lost = 0

/** Connects `count` members (clientId member-<i>) and attaches each in PRESENCE mode; `concurrency` at a time. */
async function connectMembers(a: Where & { count: number; concurrency: number }) {
  const t0 = performance.now()
  let next = 0
  let failed = 0
  const worker = async () => {
    while (next < a.count) {
      const i = next++
      try {
        const c = await RealtimeClient.connect({
          base: a.base,
          key: a.key,
          clientId: memberId(i),
          onLost: (why) => {
            lost++
            sample(`member ${i}: ${why}`)
          },
        })
        members[i] = c
        await c.attach(a.channel, { flags: Flag.PRESENCE })
      } catch (e) {
        failed++
        sample(`member ${i}: ${(e as Error).message}`)
      }
    }
  }
  await Promise.all(Array.from({ length: a.concurrency }, worker))
  return { connected: a.count - failed, failed, ms: performance.now() - t0, errorSamples: errorSamples.slice() }
}

/** Every member enters at once; resolves when every enter is answered. */
async function enter({ channel }: { channel: string }) {
  const firstSentUs = wallMicros()
  let lastAckUs = 0
  let failed = 0
  await Promise.all(
    members.map((c, i) =>
      c.enter(channel, memberData(i)).then(
        () => void (lastAckUs = wallMicros()),
        (e: Error) => {
          failed++
          sample(`member ${i}: ${e.message}`)
        },
      ),
    ),
  )
  const faults = members.reduce((n, c) => n + c.faults, 0)
  return { entered: members.length - failed, failed, firstSentUs, lastAckUs, faults, lost, errorSamples }
}

async function closeMembers() {
  await Promise.all(members.map((c) => c.close()))
  return members.length
}

// the observer: one connection receiving presence, counting each member's ENTER
let observer: RealtimeClient | undefined
const entered = new Map<string, number>()
let duplicates = 0
let otherEvents = 0
let lastEnterUs = 0

async function observe(a: Where) {
  observer = await RealtimeClient.connect({
    base: a.base,
    key: a.key,
    clientId: 'observer',
    onPresence: (pm: ServerMessage) => {
      const at = wallMicros()
      for (const p of pm.presence ?? []) {
        if (p.action !== 2) {
          otherEvents++
          continue
        }
        if (entered.has(p.clientId)) duplicates++
        else entered.set(p.clientId, at)
        lastEnterUs = at
      }
    },
    onLost: (why) => sample(`observer: ${why}`),
  })
  const att = await observer.attach(a.channel)
  if (!(att.flags & Flag.PRESENCE_SUBSCRIBE)) throw new Error('the observer was not granted PRESENCE_SUBSCRIBE')
  return { flags: att.flags }
}

/** Waits until the observer saw `count` distinct members enter (or the timeout). */
async function observed({ count, timeoutMs }: { count: number; timeoutMs: number }) {
  const until = performance.now() + timeoutMs
  while (entered.size < count && performance.now() < until) await Bun.sleep(5)
  const faults = observer?.faults ?? 0
  await observer?.close()
  return { distinct: entered.size, duplicates, otherEvents, lastEnterUs, faults, errorSamples: errorSamples.slice() }
}

/** A new attacher: connect, then ATTACH (default modes) timed until ATTACHED and until the last SYNC page. */
async function attach(a: Where & { clientId: string; members: number }) {
  const c = await RealtimeClient.connect({ base: a.base, key: a.key, clientId: a.clientId })
  try {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const att = await c.attach(a.channel)
    const attachedMs = performance.now() - t0
    const sync = att.sync ? await att.sync : { members: [] as PresenceEntry[], frames: 0, bytes: 0, doneAt: t0 }
    const cpu = process.cpuUsage(cpu0)
    const ids = new Set(sync.members.map((m) => m.clientId))
    const wrong = sync.members.filter((m) => {
      const i = Number(m.clientId.slice('member-'.length))
      return m.action !== 1 || m.clientId !== memberId(i) || m.data !== memberData(i) || !m.connectionId || !m.id
    })
    return {
      hasPresence: (att.flags & Flag.HAS_PRESENCE) !== 0,
      attachedMs,
      syncMs: sync.doneAt - t0,
      frames: sync.frames,
      bytes: sync.bytes,
      members: sync.members.length,
      distinct: ids.size,
      wrong: wrong.length,
      wrongSample: wrong.slice(0, 2),
      faults: c.faults,
      clientCpuMs: (cpu.user + cpu.system) / 1000,
    }
  } finally {
    await c.close()
  }
}

/** The official client: connected first, then `presence.get()` timed (it attaches and waits for the SYNC). */
async function officialGet(a: Where & { port: number }) {
  const client = new Ably.Realtime({
    key: a.key,
    clientId: 'official-attacher',
    endpoint: new URL(a.base).hostname,
    port: a.port,
    tls: false,
    logLevel: 0,
  } as Ably.ClientOptions)
  try {
    await client.connection.once('connected')
    const t0 = performance.now()
    const got = await client.channels.get(a.channel).presence.get()
    return { ms: performance.now() - t0, members: got.length, distinct: new Set(got.map((m) => m.clientId)).size }
  } finally {
    client.close()
  }
}

serveAgent({ connectMembers, enter, closeMembers, observe, observed, attach, officialGet })
