import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CONSOLE_ASSETS, PAGE as CONSOLE_PAGE } from '../../src/api/console/assets'
import { SETTINGS } from '../../src/config'
import { VERSION } from '../../src/version'
import { ACCESS_TOKEN, basic, ROOT_KEY } from '../helpers/gateway'
import { everyRoute, walkMalformed } from '../helpers/route-walk'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { messages, openSse } from '../helpers/sse'
import { BINARY, ensureBinary } from '../helpers/binary'

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

  test('--version prints the version; unknown arguments are refused with the usage (exit 2), nothing created', () => {
    const v = Bun.spawnSync([BINARY, '--version'], { cwd })
    expect(v.exitCode).toBe(0)
    expect(v.stdout.toString()).toStartWith(`gateway ${VERSION} `)
    for (const arg of ['version', '--bogus']) {
      const r = Bun.spawnSync([BINARY, arg], { cwd, env: { ...process.env, DATA_DIR: '' } })
      if (arg === 'version') expect(r.exitCode).toBe(0)
      else {
        expect(r.exitCode).toBe(2)
        expect(r.stderr.toString()).toContain('Usage: gateway')
      }
    }
    expect(readdirSync(cwd)).toEqual([])
  })

  test.skipIf(!existsSync('/usr/bin/openssl'))(
    'healthcheck (the container HEALTHCHECK) works with TLS on',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gw-bin-tls-'))
      try {
        const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')]
        const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1']
        Bun.spawnSync(['openssl', ...args, '-subj', '/CN=localhost'], { stdout: 'ignore', stderr: 'ignore' })
        const tls = { TLS_CERT_FILE: cert, TLS_KEY_FILE: key }
        const node = await GatewayNode.start(tls, { cmd: [BINARY], cwd, scheme: 'https' })
        started.push(node)
        const check = (env: Record<string, string>) =>
          Bun.spawnSync([BINARY, 'healthcheck'], { cwd, env: { ...process.env, PORT: String(node.port), ...env } })
        expect(check({ ...tls, HOST: '0.0.0.0' }).exitCode).toBe(0)
        expect(check({ HOST: '127.0.0.1' }).exitCode).toBe(1) // plain HTTP to a TLS port: not healthy
        await node.kill('SIGTERM')
        expect(check({ ...tls, HOST: '127.0.0.1' }).exitCode).toBe(1)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  )

  test('serves a fresh data dir: event stream, publish, msgpack, then stops on SIGTERM', async () => {
    const node = await start()
    await roundTrip(node, 'ship')
    // msgpack both ways (msgpackr's pure-JS path: the native addon is not embedded)
    const h = await fetch(`${node.url}/channels/ship/messages?limit=1`, {
      headers: { authorization: basic(ROOT_KEY), accept: 'application/x-msgpack' },
    })
    expect(h.headers.get('content-type')).toContain('application/x-msgpack')
    const { unpack } = await import('msgpackr')
    expect((unpack(new Uint8Array(await h.arrayBuffer())) as any[])[0]).toMatchObject({ data: 'hello from the binary' })
    // the API browser's assets are embedded (no CDN, no node_modules next to the binary)
    for (const asset of ['swagger-ui-bundle.js', 'swagger-ui.css']) {
      const r = await fetch(`${node.url}/openapi/assets/${asset}`)
      expect(r.status).toBe(200)
      expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(100_000)
    }
    expect((await fetch(`${node.url}/openapi/assets/favicon-32x32.png`)).headers.get('content-type')).toBe('image/png')
    expect(
      ((await (await fetch(`${node.url}/openapi/json`)).json()) as any).paths['/channels/{channel}/messages'],
    ).toBeDefined()
    // so are the web console's page and modules, byte for byte
    const consolePage = await fetch(`${node.url}/console`)
    expect(consolePage.status).toBe(200)
    expect(await consolePage.text()).toBe(readFileSync(CONSOLE_PAGE, 'utf8'))
    for (const [name, asset] of Object.entries(CONSOLE_ASSETS)) {
      const r = await fetch(`${node.url}/console/assets/${name}`)
      expect(r.status).toBe(200)
      expect(await r.text()).toBe(readFileSync(asset.path, 'utf8'))
    }
    // self-contained: no file of the build machine's node_modules is mapped (e.g. a .node addon)
    const maps = `/proc/${node.pid}/maps`
    if (existsSync(maps))
      expect(
        readFileSync(maps, 'utf8')
          .split('\n')
          .filter((l) => l.includes('node_modules')),
      ).toEqual([])

    // begun again with the allocator's purge delay, as the binary alone (no `/$bunfs/` script argument)
    if (existsSync(maps)) {
      expect(readFileSync(`/proc/${node.pid}/environ`, 'latin1').split('\0')).toContain('MIMALLOC_PURGE_DELAY=-1')
      expect(readFileSync(`/proc/${node.pid}/cmdline`, 'latin1').split('\0').filter(Boolean)).toEqual([BINARY])
    }

    // `docker stop`: SIGTERM with a subscriber still connected; a clean exit within a few seconds
    const open = await openSse(`${node.url}/sse?v=1.2&channels=ship&key=${encodeURIComponent(ROOT_KEY)}`)
    expect(open.status).toBe(200)
    const t0 = Date.now()
    await Promise.race([
      node.kill('SIGTERM'),
      Bun.sleep(5000).then(() => {
        throw new Error(`no exit within 5 s of SIGTERM: ${node.log}`)
      }),
    ])
    expect(Date.now() - t0).toBeLessThan(5000)
    expect(node.exit).toEqual({ code: 0, signal: null })
    await open.ended
  })

  test('malformed percent-encoding on every route: a 4xx in the error shape, never the runtime error page', async () => {
    const node = await start({ BOOTSTRAP_ACCESS_TOKEN: ACCESS_TOKEN })
    expect(await walkMalformed(node.url, await everyRoute())).toEqual([])
    await node.kill('SIGTERM')
  }, 120_000)

  test('rules use the bundled RE2 (filters) and ipaddr.js (targets)', async () => {
    const node = await start({ BOOTSTRAP_ACCESS_TOKEN: 'ship-token' })
    const rule = (channelFilter: string, url: string) =>
      fetch(`${node.url}/v1/apps/${ROOT_KEY.split('.')[0]}/rules`, {
        method: 'POST',
        headers: { authorization: 'Bearer ship-token', 'content-type': 'application/json' },
        body: JSON.stringify({ ruleType: 'http', source: { channelFilter }, target: { url } }),
      })
    expect((await rule('^(a+)+$', 'https://hooks.example.com/in')).status).toBe(201)
    const backref = (await (await rule('(a)\\1', 'https://hooks.example.com/in')).json()) as any
    expect(backref.error.message).toContain('not a valid RE2 regular expression')
    const metadata = (await (await rule('.*', 'http://169.254.169.254/')).json()) as any
    expect(metadata.error.message).toContain('not a public address')
    await node.kill('SIGTERM')
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
