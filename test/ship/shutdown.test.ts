import { afterAll, expect, test } from 'bun:test'
import { basic, ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { messages, openSse } from '../helpers/sse'

let node: GatewayNode | undefined
afterAll(async () => {
  await node?.stop()
})

const publish = async (n: GatewayNode, data: string) => {
  const r = await fetch(`${n.url}/channels/gs/messages`, {
    method: 'POST',
    headers: { authorization: basic(ROOT_KEY), 'content-type': 'application/json' },
    body: JSON.stringify({ data }),
  })
  expect(r.status).toBe(201)
}

test('SIGTERM closes streams, exits cleanly, and a restarted server resumes every client without loss', async () => {
  node = await GatewayNode.start({ SHUTDOWN_TIMEOUT_MS: '3000' })
  const url = () => `${node!.url}/sse?v=1.2&channels=gs&key=${encodeURIComponent(ROOT_KEY)}`
  const early = await openSse(url())
  const watcher = await openSse(url())
  for (let i = 0; i < 5; i++) await publish(node, `m${i}`)
  await early.until((e) => messages(e).length === 5)
  const lastId = messages(early.events)[4]!.id!
  early.close() // this client goes away and misses what follows
  for (let i = 5; i < 8; i++) await publish(node, `m${i}`)
  await watcher.until((e) => messages(e).length === 8)

  const t0 = Date.now()
  await node.kill('SIGTERM')
  await watcher.ended // the connected client sees its stream end
  expect(node.exit.code).toBe(0)
  expect(Date.now() - t0).toBeLessThan(5000)

  await node.restart()
  const resumed = await openSse(`${url()}&lastEvent=${encodeURIComponent(lastId)}`)
  await resumed.until((e) => messages(e).length === 3)
  await publish(node, 'after')
  await resumed.until((e) => messages(e).length === 4)
  expect(resumed.events.filter((e) => e.event === 'error')).toEqual([])
  expect(messages(resumed.events).map((e) => JSON.parse(e.data).data)).toEqual(['m5', 'm6', 'm7', 'after'])
  resumed.close()
}, 30_000)
