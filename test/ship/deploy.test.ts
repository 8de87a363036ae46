import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { parseExposition } from '../helpers/prometheus'

/**
 * deploy/: the compose file of three replicas + Redis + Prometheus + Grafana, and the dashboard.
 * No Docker engine runs here, and `docker compose` (the v2 plugin) is not installed: the YAML is
 * checked for structure, and `docker-compose config` (Debian's v1 client) is run where present.
 */
const DEPLOY = join(import.meta.dir, '..', '..', 'deploy')
const read = (p: string) => readFileSync(join(DEPLOY, p), 'utf8')
const compose = Bun.YAML.parse(read('compose.yaml')) as any
const dashboard = JSON.parse(read('grafana/dashboards/gateway.json'))

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
})
afterAll(async () => {
  await gw.close()
})

test('compose: three replicas on one Redis with persistence, Prometheus and Grafana', () => {
  const s = compose.services
  const replicas = ['gateway-1', 'gateway-2', 'gateway-3']
  expect(Object.keys(s).sort()).toEqual([...replicas, 'grafana', 'prometheus', 'redis'])
  for (const [i, name] of replicas.entries()) {
    expect(s[name].environment.REDIS_URL).toBe('redis://redis:6379')
    expect(s[name].environment.BOOTSTRAP_KEY).toBe(s['gateway-1'].environment.BOOTSTRAP_KEY)
    expect(s[name].ports).toEqual([`808${i + 1}:8080`])
    expect(s[name].depends_on.redis.condition).toBe('service_healthy')
  }
  expect(s['gateway-1'].build.context).toBe('..')
  expect(s.redis.command).toEqual(expect.arrayContaining(['--appendonly', 'yes']))
  expect(s.redis.volumes).toEqual(['redis-data:/data'])
  expect(Object.keys(compose.volumes)).toContain('redis-data')

  const prom = Bun.YAML.parse(read('prometheus/prometheus.yml')) as any
  expect(prom.scrape_configs[0].metrics_path).toBe('/metrics')
  expect(prom.scrape_configs[0].static_configs[0].targets).toEqual(replicas.map((r) => `${r}:8080`))
  expect(s.prometheus.volumes).toContain('./prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro')

  const datasource = (Bun.YAML.parse(read('grafana/provisioning/datasources/prometheus.yaml')) as any).datasources[0]
  expect(datasource).toMatchObject({ type: 'prometheus', url: 'http://prometheus:9090' })
  const provider = (Bun.YAML.parse(read('grafana/provisioning/dashboards/gateway.yaml')) as any).providers[0]
  expect(s.grafana.volumes).toEqual(
    expect.arrayContaining([
      './grafana/provisioning:/etc/grafana/provisioning:ro',
      `./grafana/dashboards:${provider.options.path}:ro`,
    ]),
  )
  for (const p of dashboard.panels) expect(p.datasource.uid).toBe(datasource.uid)
})

const composeCli = ['/usr/bin/docker-compose', '/usr/local/bin/docker-compose'].find((p) => Bun.which(p))
test.skipIf(!composeCli)('docker-compose config accepts the file (and asks for the bootstrap secrets)', () => {
  const env = { ...process.env, BOOTSTRAP_KEY: 'myapp.root:secret', BOOTSTRAP_ACCESS_TOKEN: 'token' }
  const ok = Bun.spawnSync([composeCli!, '-f', join(DEPLOY, 'compose.yaml'), 'config', '-q'], { env })
  expect(ok.stderr.toString()).toBe('')
  expect(ok.exitCode).toBe(0)
  const { BOOTSTRAP_KEY: _, ...without } = env
  const missing = Bun.spawnSync([composeCli!, '-f', join(DEPLOY, 'compose.yaml'), 'config', '-q'], { env: without })
  expect(missing.exitCode).not.toBe(0)
  expect(missing.stderr.toString()).toContain('BOOTSTRAP_KEY')
})

test('the dashboard is valid and refers only to metrics the server exports', async () => {
  expect(dashboard).toMatchObject({ uid: 'gateway', title: expect.any(String) })
  const exported = parseExposition(await (await gw.request('/metrics', { key: null })).text())
  const names = new Set<string>()
  for (const [name, family] of exported) {
    names.add(name)
    if (family.type === 'histogram') for (const x of ['_bucket', '_sum', '_count']) names.add(name + x)
  }
  const ids = new Set<number>()
  const unknown: string[] = []
  for (const panel of dashboard.panels) {
    expect(ids.has(panel.id)).toBe(false)
    ids.add(panel.id)
    expect(panel.targets.length).toBeGreaterThan(0)
    for (const t of panel.targets) {
      // metric names: identifiers that are neither functions (followed by "("), label names
      // (inside braces or by/without lists) nor keywords
      const expr = (t.expr as string)
        .replace(/\{[^}]*\}/g, '')
        .replace(/\[[^\]]*\]/g, '')
        .replace(/\b(by|without)\s*\([^)]*\)/g, '')
      for (const m of expr.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
        const id = m[0]
        if (/^\s*\(/.test(expr.slice(m.index! + id.length))) continue // a function
        if (!names.has(id)) unknown.push(`${panel.title}: ${id}`)
      }
    }
  }
  expect(unknown).toEqual([])
})

test('the dashboard has panels for realtime traffic, latencies, slow consumers, presence, webhooks and queues', () => {
  const exprs = dashboard.panels.flatMap((p: { targets: Array<{ expr: string }> }) => p.targets.map((t) => t.expr))
  const shown = (name: string) => exprs.some((e: string) => new RegExp(`\\b${name}\\b`).test(e))
  const missing = [
    'gateway_connections',
    'gateway_realtime_attachments',
    'gateway_presence_members',
    'gateway_messages_published_total',
    'gateway_messages_delivered_total',
    'gateway_realtime_ack_seconds_bucket',
    'gateway_delivery_latency_seconds_bucket',
    'gateway_realtime_slow_consumers_paused_total',
    'gateway_realtime_slow_consumers_cut_total',
    'gateway_webhook_requests_total',
    'gateway_webhook_dropped_total',
    'gateway_queue_deliveries_total',
    'gateway_queue_dropped_total',
  ].filter((n) => !shown(n))
  expect(missing).toEqual([])
  // published and delivered are split by transport (rest, realtime, event-stream)
  expect(exprs).toContain('sum by (transport) (rate(gateway_messages_delivered_total[1m]))')
})

test('the image health check is the binary’s healthcheck command (https when TLS is on)', () => {
  const dockerfile = readFileSync(join(import.meta.dir, '..', '..', 'Dockerfile'), 'utf8')
  expect(dockerfile).toContain('CMD ["/usr/local/bin/gateway", "healthcheck"]')
  expect(dockerfile).not.toContain('curl')
})
