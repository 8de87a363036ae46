/**
 * The AI Transport SDK (`@ably/ai-transport` from npm) over the official `ably` client, msgpack
 * and JSON: an agent streams a response with the SDK's encoder (a message created, then tokens
 * appended, then closed with status complete); clients decode the channel with the SDK's decoder.
 * A client attached from the start ends with the whole text, in fewer deliveries than tokens (the
 * default rollup window); a client attached mid-stream ends with the whole text too (its first
 * delivery is the data so far, the SDK's "first contact"), never with the tail alone. On Redis
 * the clients are on a second node as well.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createDecoderCore, createEncoderCore } from '@ably/ai-transport'
import { freshMutable as fresh, mutableNamespace } from '../helpers/mutable'
import { connectedClient, FORMATS, realtimeGateway, secondNode } from '../helpers/realtime'
import { waitFor } from '../helpers/wait'

const rt = realtimeGateway()
const other = secondNode(rt)
beforeAll(() => mutableNamespace(rt.gw))

type Event = { type: 'start' } | { type: 'delta'; delta: string } | { type: 'end'; text: string }

/** A client of the channel decoding what it receives with the SDK's decoder core. */
async function observer(port: number, name: string, binary: boolean) {
  const events: Event[] = []
  let deliveries = 0
  const decoder = createDecoderCore<Event>({
    buildStartEvents: () => [{ type: 'start' }],
    buildDeltaEvents: (_t, delta) => [{ type: 'delta', delta }],
    buildEndEvents: (t) => [{ type: 'end', text: t.accumulated }],
    decodeDiscrete: () => [],
  })
  const channel = (await connectedClient(port, { key: rt.gw.key }, binary)).channels.get(name)
  await channel.subscribe((m) => {
    deliveries++
    events.push(...decoder.decode(m))
  })
  const text = () => events.flatMap((e) => (e.type === 'delta' ? [e.delta] : [])).join('')
  const ended = () => events.find((e): e is Extract<Event, { type: 'end' }> => e.type === 'end')?.text
  return { events, text, ended, deliveries: () => deliveries }
}

const TOKENS = Array.from({ length: 80 }, (_, i) => `${i % 7 ? ' ' : '\n'}tok${i}`)

describe.each(FORMATS)('@ably/ai-transport over %s', (_format, binary) => {
  test('a response streamed by the encoder: decoded whole from the start and from mid-stream', async () => {
    for (const port of other.port ? [rt.port, other.port] : [rt.port]) {
      const name = fresh('ai')
      const early = await observer(port, name, binary)
      const agent = (await connectedClient(rt.port, { key: rt.gw.key }, binary)).channels.get(name)
      const encoder = createEncoderCore(agent as unknown as Parameters<typeof createEncoderCore>[0])
      await encoder.startStream('text-1', { name: 'ai-output', data: '' })
      for (const t of TOKENS.slice(0, 40)) encoder.appendStream('text-1', t)
      // the first half made, the late client attaches while the message is still streaming
      await waitFor(
        () => early.text(),
        (x) => x.endsWith(TOKENS[39]!),
      )
      const late = await observer(port, name, binary)
      for (const t of TOKENS.slice(40)) encoder.appendStream('text-1', t)
      await encoder.closeStream('text-1', { name: 'ai-output', data: '.' })
      const full = TOKENS.join('') + '.'
      for (const o of [early, late])
        await waitFor(
          () => o.ended(),
          (x) => x !== undefined,
        )
      expect(early.ended()).toBe(full)
      expect(late.ended()).toBe(full)
      expect(late.events[0]).toEqual({ type: 'start' })
      // the appends were rolled up: fewer deliveries than fragments
      expect(early.deliveries()).toBeLessThan(TOKENS.length + 2)
      await encoder.close()
    }
  })
})
