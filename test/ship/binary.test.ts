import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SETTINGS } from '../../src/config'
import { basic, ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { messages, openSse } from '../helpers/sse'

/** The shipped artifact: `npm run build`'s single executable, run as a process outside the repo. */
const ROOT = join(import.meta.dir, '..', '..')
const BINARY = join(ROOT, 'dist', 'gateway')

const newest = (p: string): number => statSync(p).isDirectory()
  ? Math.max(0, ...readdirSync(p).map((f) => newest(join(p, f))))
  : statSync(p).mtimeMs

/** Builds dist/gateway unless it is newer than every file of src/ and package.json (the build flags). */
function ensureBinary() {
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs > Math.max(newest(join(ROOT, 'src')), newest(join(ROOT, 'package.json')))) return
  const r = Bun.spawnSync([process.execPath, 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`build failed:\n${r.stdout}\n${r.stderr}`)
}

// the binary runs from an empty dir, so nothing can be picked up from the repo's node_modules
const cwd = mkdtempSync(join(tmpdir(), 'gw-bin-cwd-'))
const started: GatewayNode[] = []
const start = async (env: Record<string, string> = {}) => {
  const n = await GatewayNode.start(env, { cmd: [BINARY], cwd })
  started.push(n)
  return n
}

beforeAll(() => ensureBinary(), 120_000)
afterAll(async () => {
  for (const n of started) await n.stop()
  rmSync(cwd, { recursive: true, force: true })
})

/** Subscribes through the node's event stream, publishes through its REST API, sees it arrive. */
async function roundTrip(node: GatewayNode, channel: string) {
  const sse = await openSse(`${node.url}/sse?v=1.2&channels=${channel}&key=${encodeURIComponent(ROOT_KEY)}`)
  try {
    expect(sse.status).toBe(200)
    const r = await fetch(`${node.url}/channels/${channel}/messages`, {
      method: 'POST',
      headers: { authorization: basic(ROOT_KEY), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'greeting', data: 'hello from the binary' }),
    })
    expect(r.status).toBe(201)
    const got = messages(await sse.until((e) => messages(e).length >= 1, 5000))
    expect(JSON.parse(got[0]!.data)).toMatchObject({ name: 'greeting', data: 'hello from the binary' })
  } finally {
    sse.close()
  }
}

describe('compiled binary', () => {
  test('--help lists every setting', () => {
    const r = Bun.spawnSync([BINARY, '--help'], { cwd })
    expect(r.exitCode).toBe(0)
    const out = r.stdout.toString()
    for (const s of Object.values(SETTINGS)) expect(out).toContain(`\`${s.env}\``)
  })

  test('serves a fresh data dir: event stream, publish, msgpack, then stops on SIGTERM', async () => {
    const node = await start()
    await roundTrip(node, 'ship')
    // msgpack both ways (msgpackr's pure-JS path: the native addon is not embedded)
    const h = await fetch(`${node.url}/channels/ship/messages?limit=1`, { headers: { authorization: basic(ROOT_KEY), accept: 'application/x-msgpack' } })
    expect(h.headers.get('content-type')).toContain('application/x-msgpack')
    const { unpack } = await import('msgpackr')
    expect((unpack(new Uint8Array(await h.arrayBuffer())) as any[])[0]).toMatchObject({ data: 'hello from the binary' })
    // self-contained: no file of the build machine's node_modules is mapped (e.g. a .node addon)
    const maps = `/proc/${node.pid}/maps`
    if (existsSync(maps)) expect(readFileSync(maps, 'utf8').split('\n').filter((l) => l.includes('node_modules'))).toEqual([])

    // `docker stop`: SIGTERM with a subscriber still connected; a clean exit within a few seconds
    const open = await openSse(`${node.url}/sse?v=1.2&channels=ship&key=${encodeURIComponent(ROOT_KEY)}`)
    expect(open.status).toBe(200)
    const t0 = Date.now()
    await Promise.race([node.kill('SIGTERM'), Bun.sleep(5000).then(() => { throw new Error(`no exit within 5 s of SIGTERM: ${node.log}`) })])
    expect(Date.now() - t0).toBeLessThan(5000)
    expect(node.exit).toEqual({ code: 0, signal: null })
    await open.ended
  })

  const hasRedis = existsSync(REDIS_SERVER)
  test.skipIf(!hasRedis)('runs on Redis (node-redis is bundled)', async () => {
    const redis = await TestRedis.start()
    try {
      const node = await start({ REDIS_URL: redis.url, REDIS_PREFIX: 'ship:' })
      expect(await (await fetch(`${node.url}/ready`)).json()).toMatchObject({ backend: 'redis' })
      await roundTrip(node, 'ship-redis')
      await node.kill('SIGTERM')
      expect(node.exit.code).toBe(0)
    } finally {
      await redis.kill()
    }
  })
})
