import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PublishOptions } from '../../src/core/ports'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { freePort, REDIS_SERVER } from '../helpers/redis'
import { rawRedis } from '../helpers/redis-cluster'
import { requireSystem } from '../helpers/system'

/**
 * A Redis Cluster of one node that never learned its own address (no other node ever met it):
 * `CLUSTER SLOTS` gives its host as ''. The node still finds one master behind every key (the
 * seed's host), so publishes to many channels share a script call, and an account's charge goes
 * inside the publish step (the bucket is on the channel's master).
 */
const available = requireSystem(REDIS_SERVER, 'redis-server')
let proc: ChildProcess | undefined
let dir: string
let url: string
let gw: TestGateway

beforeAll(async () => {
  if (!available) return
  const port = await freePort()
  dir = mkdtempSync(join(tmpdir(), 'lone-cluster-'))
  proc = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--save', '', '--appendonly', 'no'],
    { cwd: dir, stdio: 'ignore' },
  )
  url = `redis://127.0.0.1:${port}`
  const raw = await connectWhenUp(url)
  try {
    await raw.send(['CLUSTER', 'ADDSLOTSRANGE', '0', '16383'])
    for (let i = 0; !String(await raw.send(['CLUSTER', 'INFO'])).includes('cluster_state:ok'); i++) {
      if (i > 400) throw new Error('the lone cluster node never reached cluster_state:ok')
      await Bun.sleep(25)
    }
    const slots = (await raw.send(['CLUSTER', 'SLOTS'])) as Array<[number, number, [string, number]]>
    expect(slots[0]![2]![0]).toBe('') // the case under test: no address of its own
  } finally {
    await raw.close()
  }
  gw = await createTestGateway({ redisUrl: url, redisCluster: true })
}, 30_000)

afterAll(async () => {
  await gw?.close()
  proc?.kill('SIGKILL')
  if (dir) rmSync(dir, { recursive: true, force: true })
})

async function connectWhenUp(u: string) {
  for (let i = 0; ; i++) {
    try {
      return await rawRedis({ redisUrl: u })
    } catch (e) {
      if (i > 200) throw e
      await Bun.sleep(25)
    }
  }
}

/** Script calls (EVALSHA, EVAL) the node has answered so far. */
async function scriptCalls(): Promise<number> {
  const raw = await rawRedis({ redisUrl: url })
  try {
    const info = String(await raw.send(['INFO', 'commandstats']))
    let total = 0
    for (const m of info.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)) total += Number(m[1])
    return total
  } finally {
    await raw.close()
  }
}

let n = 0
const fresh = () => `lone-${Date.now()}-${n++}`

describe.skipIf(!available)('a Redis Cluster node with no address of its own', () => {
  test('60 charged publishes to 60 channels made at once: one script call, charges inside it, in order', async () => {
    const broker = gw.backend.broker
    const acct = `acct-${fresh()}`
    const now = Date.now()
    const opts = (burst: number): PublishOptions => ({
      persisted: false,
      charge: { key: acct, cost: 1, rate: 0.001, burst, now },
    })
    await broker.publish('app', fresh(), [{ id: 'warm', data: 'w' }], opts(60)) // the scripts are loaded
    const before = await scriptCalls()
    const channels = Array.from({ length: 60 }, fresh)
    const results = await Promise.all(
      channels.map((ch, i) => broker.publish('app', ch, [{ id: `m-${i}`, data: String(i) }], opts(60))),
    )
    // one master behind every slot: one batch; its charges in its step, no bucket script before it
    expect(await scriptCalls()).toBe(before + 1)
    // the bucket of 60 held 59 after the warm-up: 59 pass in the order made, the last is refused alone
    expect(results.map((r) => r.charged?.ok)).toEqual([...Array(59).fill(true), false])
    expect(results.map((r) => r.appended)).toEqual([...Array(59).fill(1), 0])
  })
})
