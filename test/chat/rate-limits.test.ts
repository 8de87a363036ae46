import { expect, test } from 'bun:test'
import { createTestGateway } from '../helpers/gateway'
import { expectError, room, send } from './chat-fixture'

test('chat shares the per-account rate limits of the channel interface', async () => {
  // one token per bucket, refilled only after 100 s
  const gw = await createTestGateway({
    rateLimits: true,
    limitHistoryPerSecond: 0.01,
    limitMessagesPerSecond: 0.01,
    rateLimitBurstSeconds: 1,
  })
  try {
    await send(gw, 'limited', { text: 'one' })
    await expectError(
      await gw.request('/channels/limited/messages', { method: 'POST', json: { data: 'two' } }),
      429,
      42910,
    )
    await expectError(
      await gw.request(`${room('limited')}/typing`, { method: 'POST', json: { clientId: 'a', isTyping: true } }),
      429,
      42910,
    )
    expect((await gw.request('/channels/limited/messages')).status).toBe(200)
    await expectError(await gw.request(`${room('limited')}/messages`), 429, 42910)
  } finally {
    await gw.close()
  }
})
