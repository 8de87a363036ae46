/**
 * Token renewal at the default TOKEN_RENEW_LEAD_MS (30 s) with tokens that live less than that:
 * the server asks once per token, ahead of its expiry by a share of its life, never again the
 * moment a new token arrives (a renewal loop made one client cost the node 400+ tokens a second).
 */
import { expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { authCallbackOf, connectedClient, fresh, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()
const TOKEN_TTL_MS = 5000
const WATCH_MS = 30_000

test('5 s tokens with an authCallback: about one token per token life over 30 s, one connection, no gap', async () => {
  const m = authCallbackOf(() => rt.rest().auth.requestToken({ ttl: TOKEN_TTL_MS }))
  const client = await connectedClient(rt.port, { authCallback: m.authCallback })
  const id = client.connection.id!
  const changes: Ably.ConnectionStateChange[] = []
  client.connection.on((c) => c.current !== 'connected' && changes.push(c))
  const ch = client.channels.get(fresh('renewing'))
  await ch.attach()
  const before = m.calls.length
  await Bun.sleep(WATCH_MS)
  const requests = m.calls.length - before
  // one per token life is 6; a renewal asked at 3/4 of each life makes 8
  expect(requests).toBeGreaterThanOrEqual(WATCH_MS / TOKEN_TTL_MS - 1)
  expect(requests).toBeLessThanOrEqual(12)
  expect([client.connection.state, client.connection.id, changes]).toEqual(['connected', id, []])
  expect(ch.state).toBe('attached')
}, 60_000)
