/**
 * A realtime subscriber that falls behind while a message is annotated (more unread than
 * REALTIME_BUFFER_BYTES: its subscription pauses): annotations and summaries never enter the
 * channel log, so the catch-up cannot give them back. It must end on the message's current
 * summary, and get every annotation or be told (ATTACHED with error 80020, continuity lost) that it
 * missed some. The subscriber is a comet connection that stops polling (what it has not taken
 * counts as unread, exactly), then takes everything.
 */
import { expect, test } from 'bun:test'
import { basic } from '../helpers/gateway'
import { freshMutable, messagesPath, mutableNamespace, publishOne } from '../helpers/mutable'
import { realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway({ realtimeBufferBytes: 4096 })

const SUBSCRIBE = 1 << 18
const ANNOTATION_SUBSCRIBE = 1 << 22
const ANNOTATIONS = 1000

type Pm = { action: number; error?: { code: number }; annotations?: unknown[]; messages?: any[] }

test('a subscriber far behind ends on the current summary, and is told of the annotations it missed', async () => {
  await mutableNamespace(rt.gw)
  const channel = freshMutable('backlog')
  const serial = await publishOne(rt.gw, channel, { name: 'm', data: 'annotate me' })
  const r = await fetch(`${rt.base}/comet/connect?v=6&format=json&key=${encodeURIComponent(rt.gw.key)}`)
  const [connected] = (await r.json()) as Array<{ connectionDetails: { connectionKey: string } }>
  const base = `${rt.base}/comet/${connected!.connectionDetails.connectionKey}`
  const sent = await fetch(`${base}/send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([{ action: 10, channel, flags: SUBSCRIBE | ANNOTATION_SUBSCRIBE }]),
  })
  expect(sent.status).toBe(204)
  const frames: Pm[] = []
  const poll = async () => frames.push(...((await (await fetch(`${base}/recv`)).json()) as Pm[]))
  while (!frames.some((pm) => pm.action === 11)) await poll()
  frames.length = 0

  // 1,000 annotations of 1 KB, 10 requests over the port, while the client takes nothing: far more
  // than it may hold unread
  const data = 'd'.repeat(1000)
  for (let from = 0; from < ANNOTATIONS; from += 100) {
    const body = Array.from({ length: 100 }, () => ({ type: 'views:total.v1', data }))
    const r = await fetch(`${rt.base}${messagesPath(channel, `/${serial}/annotations`)}`, {
      method: 'POST',
      headers: { authorization: basic(rt.gw.key), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    expect(r.status).toBe(201)
  }

  const current = { 'views:total.v1': { total: ANNOTATIONS } }
  const seen = () => {
    let annotations = 0
    let summary: unknown
    for (const pm of frames) {
      if (pm.action === 21) annotations += pm.annotations!.length
      if (pm.action === 15) for (const m of pm.messages!) if (m.action === 4) summary = m.annotations.summary
    }
    const notices = frames.filter((pm) => pm.action === 11 && pm.error).map((pm) => pm.error!.code)
    return { annotations, summary, notices }
  }
  const done = () => {
    const s = seen()
    return (
      JSON.stringify(s.summary) === JSON.stringify(current) && (s.annotations === ANNOTATIONS || s.notices.length > 0)
    )
  }
  const until = Date.now() + 15_000
  while (!done() && Date.now() < until && !frames.some((pm) => pm.action === 6 || pm.action === 9)) await poll()
  const { annotations, summary, notices } = seen()
  expect(frames.filter((pm) => pm.action === 6 || pm.action === 9)).toEqual([])
  expect(summary).toEqual(current)
  // the subscription did pause: not every annotation could be handed over, and the client was told
  expect(annotations).toBeLessThan(ANNOTATIONS)
  expect(notices).toEqual([80020])
}, 60_000)
