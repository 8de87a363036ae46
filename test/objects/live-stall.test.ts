/**
 * What one client can make the plugin's LiveObjects cost (issue 40: shared references, a map of
 * large values), on a gateway in a process of its own (so a stall shows in its own `/health`
 * answers) on the backend of the run, while `/health` is polled and, for the large map, another
 * channel is published to: no answer may take a second (a busy machine adds milliseconds; each
 * reproduction held the node for seconds before).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { GatewayNode } from '../helpers/node-process'
import { rawConnected } from '../helpers/realtime-raw'
import { fresh } from '../helpers/realtime'
import { KEY_AUTH, ROOT_KEY, hostileNode, watchHealth } from '../hostile/fixture'

let node: GatewayNode
beforeAll(async () => {
  node = await hostileNode()
}, 30_000)
afterAll(async () => {
  await node?.stop()
})

const STALL = 1000
const json = { 'content-type': 'application/json' }
const objects = (channel: string, ops: unknown) =>
  fetch(`${node.url}/channels/${channel}/object`, {
    method: 'POST',
    headers: { ...KEY_AUTH, ...json },
    body: JSON.stringify(ops),
  })

/** The slowest of one publish at a time to `channel` while running (a stall of Redis or of the node shows). */
function watchPublishes(channel: string) {
  let running = true
  let slowest = 0
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const t = performance.now()
      const r = await fetch(`${node.url}/channels/${channel}/messages`, {
        method: 'POST',
        headers: { ...KEY_AUTH, ...json },
        body: JSON.stringify({ name: 'tick', data: String(i) }),
      })
      await r.arrayBuffer()
      if (r.status !== 201) throw new Error(`publish answered ${r.status}`)
      slowest = Math.max(slowest, performance.now() - t)
      await Bun.sleep(5)
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return slowest
    },
  }
}

describe('LiveObjects reads and writes are bounded', () => {
  test('shared references: a read writes each object once (21 maps, two keys each to the next)', async () => {
    const channel = fresh('lo-dag')
    let next: string | undefined
    for (let i = 0; i < 21; i++) {
      const entries = next ? { a: { data: { objectId: next } }, b: { data: { objectId: next } } } : {}
      const r = await objects(channel, { mapCreate: { semantics: 0, entries } })
      expect(r.status).toBe(200)
      next = ((await r.json()) as { objectIds: string[] }).objectIds[0]!
    }
    expect(
      (await objects(channel, { objectId: 'root', mapSet: { key: 'dag', value: { objectId: next } } })).status,
    ).toBe(200)
    const health = watchHealth(node.url)
    const t = performance.now()
    const full = await fetch(`${node.url}/channels/${channel}/object?compact=false`, { headers: KEY_AUTH })
    const fullText = await full.text()
    const compact = await fetch(`${node.url}/channels/${channel}/object`, { headers: KEY_AUTH })
    const compactText = await compact.text()
    const took = performance.now() - t
    const { slowest } = await health.stop()
    console.log(
      `DAG read: full ${fullText.length} B, compact ${compactText.length} B, ${took.toFixed(0)} ms; /health slowest ${slowest.toFixed(0)} ms`,
    )
    expect([full.status, compact.status]).toEqual([200, 200])
    expect(fullText.length).toBeLessThan(100_000)
    expect(slowest).toBeLessThan(STALL)
    // each of the 20 maps that refer to the next writes it out once, and refers to it once
    expect(compactText.match(/"objectId"/g)?.length).toBe(20)
    // a wildcard path over it resolves each object once
    const wild = await objects(channel, { path: `dag${'.*'.repeat(20)}`, mapSet: { key: 'k', value: { number: 1 } } })
    expect(wild.status).toBe(200)
    expect(((await wild.json()) as { objectIds: string[] }).objectIds.length).toBe(1)
  }, 60_000)

  test("a map of large values: each write costs what it changes, the channel's size is bounded (92001), sync pages are bounded in bytes", async () => {
    const channel = fresh('lo-big')
    const value = 'v'.repeat(60_000)
    const health = watchHealth(node.url)
    const others = watchPublishes(fresh('lo-other'))
    let accepted = 0
    let refusal: { code?: number; message?: string } | undefined
    const times: number[] = []
    for (; accepted < 200; accepted++) {
      const t = performance.now()
      const r = await objects(channel, { objectId: 'root', mapSet: { key: `k${accepted}`, value: { string: value } } })
      times.push(performance.now() - t)
      if (r.status !== 200) {
        refusal = ((await r.json()) as { error: { code: number; message: string } }).error
        expect(r.status).toBe(400)
        break
      }
      await r.arrayBuffer()
    }
    const slowestOther = await others.stop()
    const { slowest } = await health.stop()
    console.log(
      `big map: ${accepted} writes of 60 KB accepted, first ${times[0]!.toFixed(1)} ms, last ${times[accepted - 1]!.toFixed(1)} ms; /health slowest ${slowest.toFixed(0)} ms; another channel's publish slowest ${slowestOther.toFixed(0)} ms`,
    )
    // 6.5 MiB by default: 113 values of 60 KB
    expect([refusal?.code, refusal?.message]).toEqual([92001, 'channel object total size limit 6815744 exceeded'])
    expect(accepted).toBe(113)
    expect(slowest).toBeLessThan(STALL)
    expect(slowestOther).toBeLessThan(STALL)

    // a sync of it: pages of about one message each
    const { raw } = await rawConnected(node.url, { key: ROOT_KEY })
    raw.send({ action: 10, channel, flags: (1 << 24) | (1 << 25) })
    await raw.next((m) => m.action === 20 && /:$/.test(m.channelSerial), 15_000)
    const pages = raw.frames.filter((m) => m.action === 20)
    const sizes = pages.map((p) => JSON.stringify(p).length)
    console.log(`sync: ${pages.length} OBJECT_SYNC frames, largest ${Math.max(...sizes)} B`)
    expect(pages.length).toBeGreaterThanOrEqual(accepted)
    expect(Math.max(...sizes)).toBeLessThan(2 * 65_536)
    const keys = new Set(pages.flatMap((p) => p.state.flatMap((s: any) => Object.keys(s.object.map?.entries ?? {}))))
    expect(keys.size).toBe(accepted)
  }, 120_000)
})
