/**
 * kill -9 under realtime publish load to a persisted channel, then a restart on the same data
 * (or the same Redis): the official clients resume and resend what was not acknowledged, and
 * every message is stored and delivered once. The node's last answers are lost on their way
 * (a proxy drops them, as a crash does), so a known number of publishes are in the log but not
 * acknowledged when the node dies: their resends must be answered from the log, not published
 * again (before, the embedded node looked only in its memory, empty after the crash). Client-
 * supplied ids published before and after the crash (REST) are stored once too.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { ACCESS_TOKEN, APP_ID, basic, ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { closeClients, collect, connectedClient, reach } from '../helpers/realtime'
import { freePort } from '../helpers/redis'
import { backendEnvFor } from '../helpers/redis-cluster'
import { TcpProxy } from '../helpers/tcp-proxy'

/** Runs of kill -9 and restart (each on a channel of its own). */
const RUNS = 5
/** Publishing clients, and publishes each keeps in flight. */
const PUBLISHERS = 4
const IN_FLIGHT = 8

let node: GatewayNode
let proxy: TcpProxy
beforeAll(async () => {
  const redis = await backendEnvFor(`rt-crash-${Date.now()}:`)
  node = await GatewayNode.start({ BOOTSTRAP_ACCESS_TOKEN: ACCESS_TOKEN, ...redis })
  proxy = await TcpProxy.start(node.port)
  const r = await fetch(`${node.url}/v1/apps/${APP_ID}/namespaces`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ACCESS_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'keep', persisted: true }),
  })
  expect(r.status).toBe(201)
}, 30_000)
afterAll(async () => {
  closeClients()
  await proxy?.stop()
  await node?.stop()
})

/** Every message of a channel's history, oldest first. */
async function history(channel: string): Promise<Array<{ id: string; data: string; serial: string }>> {
  const rest = new Ably.Rest({ key: ROOT_KEY, endpoint: '127.0.0.1', port: node.port, tls: false, logLevel: 0 })
  const out: Array<{ id: string; data: string; serial: string }> = []
  let page: Ably.PaginatedResult<Ably.InboundMessage> | null = await rest.channels
    .get(channel)
    .history({ direction: 'forwards', limit: 1000 })
  while (page) {
    for (const m of page.items) out.push({ id: m.id!, data: m.data as string, serial: m.serial! })
    page = page.hasNext() ? await page.next() : null
  }
  return out
}

/** Publishes until stopped, `IN_FLIGHT` at a time, each message's data unique; records which were acknowledged. */
function load(client: Ably.Realtime, channel: string, tag: string) {
  const ch = client.channels.get(channel)
  const state = { running: true, acked: new Set<string>(), failed: [] as string[], sent: 0 }
  const worker = async () => {
    while (state.running) {
      const data = `${tag}-${state.sent++}`
      try {
        await ch.publish('n', data)
        state.acked.add(data)
      } catch (e) {
        state.failed.push(`${data}: ${(e as Error).message}`)
      }
    }
  }
  const done = Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  return { state, done }
}

const duplicates = (values: string[]) => values.filter((v, i) => values.indexOf(v) !== i)

async function until(what: string, ok: () => boolean, ms = 10_000) {
  for (const end = Date.now() + ms; !ok(); await Bun.sleep(10))
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
}

test(`kill -9 under realtime publish load, ${RUNS} times: resumed clients' resends are stored and delivered once, nothing acknowledged is lost`, async () => {
  const report: string[] = []
  for (let run = 0; run < RUNS; run++) {
    const channel = `keep:crash-${run}-${Date.now()}`
    const sub = await connectedClient(node.port, { key: ROOT_KEY })
    const got = await collect(sub.channels.get(channel))
    const publishers = await Promise.all(
      Array.from({ length: PUBLISHERS }, () => connectedClient(proxy.port, { key: ROOT_KEY })),
    )
    const ids = publishers.map((p) => p.connection.id!)
    const loads = publishers.map((p, i) => load(p, channel, `r${run}p${i}`))
    const acked = () => loads.reduce((n, l) => n + l.state.acked.size, 0)
    await until('publishes acknowledged before the crash', () => acked() >= 200)

    // the node's answers stop reaching the publishers: what they have in flight (and send until
    // their windows are full) is appended, its ACK lost; then the node dies without a goodbye
    proxy.dropReplies()
    await Bun.sleep(150)
    await node.kill('SIGKILL')
    const ackedBeforeCrash = new Set(loads.flatMap((l) => [...l.state.acked]))

    // back on the same data; publishers held off until the log is read (a closed port refuses them)
    proxy.target = await freePort()
    await node.restart()
    const inLog = await history(channel)
    const unanswered = inLog.filter((m) => !ackedBeforeCrash.has(m.data))
    proxy.target = node.port

    // the publishers resume (the same connections) and resend; load goes on a little after
    for (const p of publishers) await reach(p.connection, 'connected', 15_000)
    expect(publishers.map((p) => p.connection.id)).toEqual(ids)
    const resumed = acked()
    await until('publishes acknowledged after the resume', () => acked() >= resumed + 100, 15_000)
    for (const l of loads) l.state.running = false
    await Promise.all(loads.map((l) => l.done))

    const stored = await history(channel)
    const storedData = stored.map((m) => m.data)
    const allAcked = loads.flatMap((l) => [...l.state.acked])
    // the subscriber resumed too: what was published after the restart reaches it, the last message included
    const last = stored[stored.length - 1]!.id
    await until('the last message delivered', () => got.messages.some((m) => m.id === last), 15_000)
    const delivered = got.messages.map((m) => m.id)
    report.push(
      `run ${run}: ${stored.length} stored, ${unanswered.length} in the log unacknowledged at the crash, ` +
        `${delivered.length} delivered`,
    )
    // the run exercised resends of publishes already in the log
    expect(unanswered.length).toBeGreaterThan(0)
    expect(loads.flatMap((l) => l.state.failed)).toEqual([])
    // once each in history, by id and by content; every acknowledged publish is there
    expect(duplicates(stored.map((m) => m.id))).toEqual([])
    expect(duplicates(storedData)).toEqual([])
    const storedSet = new Set(storedData)
    expect(allAcked.filter((d) => !storedSet.has(d))).toEqual([])
    // the resends were answered with the serials they were stored with (not published again)
    for (const m of unanswered) expect(stored.find((s) => s.id === m.id)?.serial).toBe(m.serial)
    // delivered at most once (a subscriber resumed across the crash), and only what is stored
    expect(duplicates(delivered)).toEqual([])
    const storedIds = new Set(stored.map((m) => m.id))
    expect(delivered.filter((id) => !storedIds.has(id))).toEqual([])
    closeClients()
  }
  console.log(report.join('\n'))
}, 120_000)

test('a resend after kill -9 is recognised behind 1,500 newer messages of the channel', async () => {
  const channel = `keep:far-${Date.now()}`
  const pub = await connectedClient(proxy.port, { key: ROOT_KEY })
  const id = pub.connection.id!
  const l = load(pub, channel, 'far')
  await until('publishes acknowledged before the crash', () => l.state.acked.size >= 50)
  proxy.dropReplies()
  await Bun.sleep(150)
  await node.kill('SIGKILL')
  const ackedBeforeCrash = new Set(l.state.acked)
  proxy.target = await freePort()
  await node.restart()
  const unanswered = (await history(channel)).filter((m) => !ackedBeforeCrash.has(m.data))
  // others publish 1,500 messages before the client is back
  for (let i = 0; i < 15; i++) {
    const r = await fetch(`${node.url}/channels/${channel}/messages`, {
      method: 'POST',
      headers: { authorization: basic(ROOT_KEY), 'content-type': 'application/json' },
      body: JSON.stringify(Array.from({ length: 100 }, (_, j) => ({ name: 'n', data: `other-${i}-${j}` }))),
    })
    expect(r.status).toBe(201)
  }
  proxy.target = node.port
  await reach(pub.connection, 'connected', 15_000)
  expect(pub.connection.id).toBe(id)
  const resumed = l.state.acked.size
  await until('publishes acknowledged after the resume', () => l.state.acked.size >= resumed + 20, 15_000)
  l.state.running = false
  await l.done
  expect(unanswered.length).toBeGreaterThan(0)
  expect(l.state.failed).toEqual([])
  const stored = await history(channel)
  expect(duplicates(stored.map((m) => m.id))).toEqual([])
  expect(duplicates(stored.map((m) => m.data))).toEqual([])
  for (const m of unanswered) expect(stored.find((s) => s.id === m.id)?.serial).toBe(m.serial)
  closeClients()
}, 30_000)

test('a client-supplied id published before and after kill -9 is stored once (REST)', async () => {
  const channel = `keep:rest-ids-${Date.now()}`
  const publish = (data: string) =>
    fetch(`${node.url}/channels/${channel}/messages`, {
      method: 'POST',
      headers: { authorization: basic(ROOT_KEY), 'content-type': 'application/json' },
      body: JSON.stringify([
        { id: 'order-42:0', name: 'n', data },
        { id: 'order-42:1', name: 'n', data },
      ]),
    })
  const first = await publish('before')
  expect(first.status).toBe(201)
  const { serials } = (await first.json()) as { serials: string[] }
  await node.kill('SIGKILL')
  await node.restart()
  const retry = await publish('after')
  expect(retry.status).toBe(201)
  expect(((await retry.json()) as { serials: string[] }).serials).toEqual(serials)
  const stored = await history(channel)
  expect(stored.map((m) => [m.id, m.data])).toEqual([
    ['order-42:0', 'before'],
    ['order-42:1', 'before'],
  ])
}, 30_000)
