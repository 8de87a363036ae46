import { expect, test } from 'bun:test'
import { metrics } from '../../src/lib/metrics'
import { APP_ID, useGateway } from '../helpers/gateway'
import { messages, openSse } from '../helpers/sse'

const ctx = useGateway()

const servedFromMemory = () => Number(/^gateway_resume_from_memory_total (\d+)/m.exec(metrics.render())?.[1] ?? 0)

test('a resume on a node that already follows the channel is exact (served from its ring on Redis)', async () => {
  const url = `${ctx.base}/sse?v=1.2&channels=rc&key=${encodeURIComponent(ctx.gw.key)}`
  const keeper = await openSse(url) // keeps the node subscribed to the channel
  const client = await openSse(url)
  for (let i = 0; i < 200 && ctx.gw.core.hub.count(APP_ID, 'rc') < 2; i++) await Bun.sleep(5)
  const publish = (data: string) => ctx.gw.request('/channels/rc/messages', { method: 'POST', json: { data } })
  for (let i = 0; i < 5; i++) await publish(`m${i}`)
  await client.until((e) => messages(e).length === 5)
  const lastId = messages(client.events)[4]!.id!
  client.close()
  for (let i = 5; i < 10; i++) await publish(`m${i}`)
  await keeper.until((e) => messages(e).length === 10)

  const before = servedFromMemory()
  const resumed = await openSse(`${url}&lastEvent=${encodeURIComponent(lastId)}`)
  await resumed.until((e) => messages(e).length === 5)
  await publish('m10')
  await resumed.until((e) => messages(e).length === 6)
  expect(messages(resumed.events).map((e) => JSON.parse(e.data).data)).toEqual(['m5', 'm6', 'm7', 'm8', 'm9', 'm10'])
  expect(resumed.events.some((e) => e.event === 'error')).toBe(false)
  if (ctx.gw.core.backendKind === 'redis') expect(servedFromMemory()).toBe(before + 1)
  keeper.close()
  resumed.close()
})
