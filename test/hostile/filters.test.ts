import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test'
import type { GatewayNode } from '../helpers/node-process'
import { closeRawClients, rawConnected, type Pm, type RawClient } from '../helpers/realtime-raw'
import { bombFilters, bombMessages } from '../helpers/filter-bomb'
import { KEY_AUTH, ROOT_KEY, hostileNode, watchHealth } from './fixture'

/**
 * The filter bomb (issue 40, item 1), against a gateway process of its own on the backend of the
 * run while `/health` is polled: two realtime connections attach many filtered channels of one
 * channel, each filter comparing two large parts of the message with each other over and over and
 * never matching, and a publish of 500 messages (~54 KB) goes to that channel. Before, every
 * filter ran on every message for every attachment and the node stalled for seconds (1,000
 * attachments: ~7 s); now each distinct filter runs once per delivered batch within its share of
 * the channel's budget (FILTER_BUDGET_STEPS), the costly ones are refused (a channel ERROR 90000,
 * the connection stays up), and a cheap filter and an unfiltered subscriber of the same channel
 * get their messages. A `/health` answer over a second is a stall, not a busy machine.
 */
let node: GatewayNode
beforeAll(async () => {
  node = await hostileNode()
}, 30_000)
afterEach(() => closeRawClients())
afterAll(async () => {
  await node?.stop()
})

const STALL = 1000
const CONNECTIONS = 2
const ATTACHMENTS = 500

const ATTACH = 10
const ATTACHED = 11
const ERROR = 9
const MESSAGE = 15

/** Attaches every name on `raw` and waits until each is ATTACHED (or refused). */
async function attachAll(raw: RawClient, names: string[]) {
  for (const channel of names) raw.send({ action: ATTACH, channel })
  const wanted = new Set(names)
  const settled = () => raw.frames.filter((f) => (f.action === ATTACHED || f.action === ERROR) && wanted.has(f.channel))
  // checked once per frame received (on the newest one), not once per frame held
  await raw.next((f) => f === raw.frames.at(-1) && settled().length >= names.length, 60_000)
  expect(raw.frames.filter((f) => f.action === ERROR)).toEqual([])
}

const publish = (channel: string, body: unknown) =>
  fetch(`${node.url}/channels/${channel}/messages`, {
    method: 'POST',
    headers: { ...KEY_AUTH, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

test('many costly filters on one channel: no stall, the costly ones refused with 90000, the others served', async () => {
  const channel = `bomb-${Math.random().toString(36).slice(2)}`
  const bombs: RawClient[] = []
  const filters = bombFilters('pairs', CONNECTIONS * ATTACHMENTS, channel)
  for (let c = 0; c < CONNECTIONS; c++) {
    const { raw } = await rawConnected(node.url, { key: ROOT_KEY })
    await attachAll(
      raw,
      filters.slice(c * ATTACHMENTS, (c + 1) * ATTACHMENTS).map((f) => f.wire(channel)),
    )
    bombs.push(raw)
  }
  // a cheap filter and an unfiltered subscriber of the same channel, on a connection of their own
  const { raw: bystander } = await rawConnected(node.url, { key: ROOT_KEY })
  const cheap = `[filter=${Buffer.from("name == 'after'").toString('base64')}]${channel}`
  await attachAll(bystander, [cheap, channel])

  const health = watchHealth(node.url)
  let failure: unknown
  try {
    const r = await publish(channel, bombMessages('pairs', 500, 60_000))
    expect(r.status).toBe(201)
    expect((await publish(channel, { name: 'after', data: 'x' })).status).toBe(201)
    await bystander.next((f) => f.action === MESSAGE && f.channel === cheap, 20_000)
    await bystander.next(
      (f) => f.action === MESSAGE && f.channel === channel && f.messages.some((m: Pm) => m.name === 'after'),
      20_000,
    )
  } catch (e) {
    failure = e
  }
  const { slowest, answers } = await health.stop()
  if (failure) throw failure
  expect(answers).toBeGreaterThanOrEqual(1)
  expect(slowest).toBeLessThan(STALL)

  // the costly filters were refused on their channel alone, with the error's shape
  const refused = bombs.flatMap((b) => b.frames.filter((f) => f.action === ERROR))
  expect(refused.length).toBeGreaterThan(0)
  for (const f of refused) {
    expect(f.channel).toStartWith('[filter=')
    expect(f.error).toMatchObject({ code: 90000, statusCode: 400 })
  }
  for (const b of bombs) expect(b.closed).toBeUndefined()
  // the cheap filter got exactly its message; the unfiltered subscriber got the whole publish
  const cheapGot = bystander.frames.filter((f) => f.action === MESSAGE && f.channel === cheap)
  expect(cheapGot.flatMap((f) => f.messages.map((m: Pm) => m.name))).toEqual(['after'])
  const all = bystander.frames.filter((f) => f.action === MESSAGE && f.channel === channel)
  expect(all.flatMap((f) => f.messages).length).toBe(501)
  expect(bystander.frames.filter((f) => f.action === ERROR)).toEqual([])
}, 120_000)
