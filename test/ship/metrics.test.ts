import { expect, test } from 'bun:test'
import { Registry, trackConnections } from '../../src/lib/metrics'
import { VERSION } from '../../src/version'
import { ACCESS_TOKEN, basic, ROOT_KEY, useGateway } from '../helpers/gateway'
import { parseExposition, type Family } from '../helpers/prometheus'
import { openSse } from '../helpers/sse'

const ctx = useGateway({ sandboxProvisioning: true })

const auth = { authorization: basic(ROOT_KEY) }
const json = { ...auth, 'content-type': 'application/json' }

/** One request on every interface, so that each one's label shows up. */
async function trafficOnEveryInterface() {
  await fetch(`${ctx.base}/channels/m/messages`, { method: 'POST', headers: json, body: '{"data":"x"}' })
  await fetch(`${ctx.base}/channels/m/messages`, { headers: auth })
  await fetch(`${ctx.base}/v1/me`, { headers: { authorization: `Bearer ${ACCESS_TOKEN}` } })
  await fetch(`${ctx.base}/chat/rooms/r/messages`, { method: 'POST', headers: json, body: '{"text":"hi"}' })
  await fetch(`${ctx.base}/liveobjects/ns/objects/o`, { method: 'PATCH', headers: json, body: '{"data":{"a":1}}' })
  await fetch(`${ctx.base}/push/channels`, { headers: auth })
  await fetch(`${ctx.base}/push/deviceRegistrations`, { headers: auth })
  await fetch(`${ctx.base}/stats`, { method: 'POST', headers: json, body: '[]' })
  await fetch(`${ctx.base}/health`)
  await fetch(`${ctx.base}/no/such/route`)
}

const family = (fams: Map<string, Family>, name: string) => {
  const f = fams.get(name)
  if (!f) throw new Error(`no family ${name}`)
  return f
}

test('/metrics passes a strict exposition-format check and labels every interface', async () => {
  const sse = await openSse(`${ctx.base}/sse?v=1.2&channels=m&key=${encodeURIComponent(ROOT_KEY)}`)
  await trafficOnEveryInterface()
  const text = await (await fetch(`${ctx.base}/metrics`)).text()
  const fams = parseExposition(text)
  sse.close()

  const byRoute = new Map(
    family(fams, 'gateway_http_requests_total').samples.map((s) => [s.labels.route, s.labels.interface]),
  )
  expect(byRoute.get('/channels/:channel/messages')).toBe('channels')
  expect(byRoute.get('/v1/me')).toBe('management')
  expect(byRoute.get('/chat/rooms/:roomId/messages')).toBe('chat')
  expect(byRoute.get('/liveobjects/:namespace/objects/:object_id')).toBe('liveobjects')
  expect(byRoute.get('/push/channels')).toBe('push')
  expect(byRoute.get('/push/deviceRegistrations')).toBe('push')
  expect(byRoute.get('/stats')).toBe('sandbox')
  expect(byRoute.get('/health')).toBe('ops')
  expect(byRoute.get('/sse')).toBe('event-stream')
  expect(byRoute.get('unmatched')).toBe('none')

  const duration = family(fams, 'gateway_http_request_duration_seconds')
  expect(duration.type).toBe('histogram')
  const publishes = duration.samples.find(
    (s) =>
      s.name.endsWith('_count') &&
      s.labels.route === '/channels/:channel/messages' &&
      s.labels.status_class === '2xx' &&
      s.labels.interface === 'channels',
  )
  expect(publishes?.value).toBeGreaterThanOrEqual(2)

  const one = (name: string) => family(fams, name).samples[0]!.value
  expect(one('process_cpu_seconds_total')).toBeGreaterThan(0)
  expect(family(fams, 'process_cpu_seconds_total').type).toBe('counter')
  expect(one('process_resident_memory_bytes')).toBeGreaterThan(1 << 20)
  expect(one('process_open_fds')).toBeGreaterThan(3)
  expect(one('process_max_fds')).toBeGreaterThan(one('process_open_fds'))
  expect(one('process_start_time_seconds')).toBeLessThanOrEqual(Date.now() / 1000)
  const build = family(fams, 'gateway_build_info').samples
  expect(build).toHaveLength(1)
  expect(build[0]!.labels).toMatchObject({ version: VERSION, backend: ctx.gw.backend.kind })
  expect(build[0]!.value).toBe(1)
  expect(family(fams, 'gateway_connections').samples.map((s) => s.labels.transport)).toContain('event-stream')
})

test('the parser refuses what promtool refuses', () => {
  const bad = [
    '# TYPE a counter\na 1\n', // counter not named _total
    'a_total 1\na_total 2\n', // duplicate series
    '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', // not cumulative
    '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', // no +Inf
    'a{b="x} 1\n', // unterminated label
    'a 1', // no final newline
    'a 1\nb 1\na 2\n', // interleaved
    'a{1b="x"} 1\n', // bad label name
  ]
  for (const text of bad) expect(() => parseExposition(text)).toThrow()
  expect(() => parseExposition('# HELP a_total x\n# TYPE a_total counter\na_total{b="q\\"\\n"} 1\n')).not.toThrow()
})

test('transports report their connections through one labelled gauge (the realtime hook)', () => {
  const r = new Registry()
  const remove = trackConnections('realtime', () => 3, r)
  trackConnections('realtime', () => 2, r)
  trackConnections('event-stream', () => 7, r)
  let f = parseExposition(r.render()).get('gateway_connections')!
  expect(Object.fromEntries(f.samples.map((s) => [s.labels.transport, s.value]))).toEqual({
    realtime: 5,
    'event-stream': 7,
  })
  remove()
  f = parseExposition(r.render()).get('gateway_connections')!
  expect(f.samples.find((s) => s.labels.transport === 'realtime')!.value).toBe(2)
})
