import { expect, test } from 'bun:test'
import { basic, useGateway } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { messages, openSse } from '../helpers/sse'

const ctx = useGateway()

test('/metrics reports requests, publishes, deliveries, connections and rings in Prometheus text', async () => {
  const s = await openSse(`${ctx.base}/sse?v=1.2&channels=metered&key=${encodeURIComponent(ctx.gw.key)}`)
  for (let i = 0; i < 3; i++) {
    await fetch(`${ctx.base}/channels/metered/messages`, {
      method: 'POST',
      headers: { authorization: basic(ctx.gw.key), 'content-type': 'application/json' },
      body: '{"data":"x"}',
    })
  }
  await fetch(`${ctx.base}/channels/metered/messages?limit=0`, { headers: { authorization: basic(ctx.gw.key) } })
  await s.until((e) => messages(e).length === 3)
  const r = await fetch(`${ctx.base}/metrics`)
  expect(r.headers.get('content-type')).toStartWith('text/plain')
  const text = await r.text()
  const value = (line: RegExp) =>
    Number(
      text
        .split('\n')
        .find((l) => line.test(l))
        ?.split(' ')
        .at(-1),
    )
  expect(
    value(/^gateway_http_requests_total\{interface="channels",route="\/channels\/:channel\/messages",status="201"\}/),
  ).toBeGreaterThanOrEqual(3)
  expect(
    value(/^gateway_http_requests_total\{interface="channels",route="\/channels\/:channel\/messages",status="400"\}/),
  ).toBeGreaterThanOrEqual(1)
  expect(value(/^gateway_messages_published_total\{transport="rest"\} /)).toBeGreaterThanOrEqual(3)
  expect(value(/^gateway_messages_delivered_total\{transport="event-stream"\} /)).toBeGreaterThanOrEqual(3)
  expect(value(/^gateway_connections\{transport="event-stream"\} /)).toBeGreaterThanOrEqual(1)
  expect(value(/^gateway_ring_messages /)).toBeGreaterThanOrEqual(3)
  expect(text).toContain('# TYPE gateway_http_requests_total counter')
  s.close()
})

test('logs are JSON lines with request ids and never hold a key secret or a token', async () => {
  const secret = 'VerySecretPart-0123456789'
  const key = `logapp.logkey:${secret}`
  const node = await GatewayNode.start({
    LOG_LEVEL: 'debug',
    BOOTSTRAP_KEY: key,
    BOOTSTRAP_ACCESS_TOKEN: 'mgmt-token-SECRET-42',
  })
  try {
    const h = { authorization: basic(key), 'content-type': 'application/json' }
    await fetch(`${node.url}/channels/c/messages`, { method: 'POST', headers: h, body: '{"data":"x"}' })
    await fetch(`${node.url}/channels/c/messages?key=${encodeURIComponent(key)}`)
    await fetch(`${node.url}/channels/c/messages`, {
      headers: { authorization: basic(`logapp.logkey:wrong-${secret}`) },
    })
    const token = (
      (await (
        await fetch(`${node.url}/keys/logapp.logkey/requestToken`, { method: 'POST', headers: h, body: '{}' })
      ).json()) as any
    ).token as string
    await fetch(`${node.url}/channels/c/messages?accessToken=${encodeURIComponent(token)}`)
    await fetch(`${node.url}/channels/c/messages`, {
      headers: { authorization: `Bearer ${Buffer.from(token).toString('base64')}`, 'x-request-id': 'req-123' },
    })
    await fetch(`${node.url}/v1/me`, { headers: { authorization: 'Bearer mgmt-token-SECRET-42' } })
    const s = await openSse(`${node.url}/sse?v=1.2&channels=c&key=${encodeURIComponent(key)}`)
    s.close()
    await node.kill('SIGTERM')
    const lines = node.log.split('\n').filter((l) => l.trim())
    expect(lines.length).toBeGreaterThan(5)
    for (const l of lines) expect(() => JSON.parse(l)).not.toThrow()
    expect(lines.some((l) => JSON.parse(l).requestId === 'req-123')).toBe(true)
    for (const needle of [
      secret,
      token,
      token.split('.')[3]!,
      Buffer.from(key).toString('base64'),
      'mgmt-token-SECRET-42',
    ]) {
      expect(node.log.includes(needle)).toBe(false)
    }
  } finally {
    await node.stop()
  }
})
