import { expect, test } from 'bun:test'
import type { Server } from 'bun'
import { connectionRate } from '../../src/api/http/connection-rate'

/** A server whose requestIP gives the peer each request names (its connection). */
const serverOf = (peer: Map<Request, { address: string; port: number }>) =>
  ({ requestIP: (r: Request) => ({ family: 'IPv4', ...peer.get(r)! }) }) as unknown as Server<unknown>

test('past the bound, a connection is answered 429 / 42910 before any work; other connections are not', async () => {
  const peers = new Map<Request, { address: string; port: number }>()
  const server = serverOf(peers)
  const over = connectionRate<unknown>(3)
  const req = (port: number) => {
    const r = new Request('https://gw.example/channels/x/messages')
    peers.set(r, { address: '127.0.0.1', port })
    return r
  }
  for (let i = 0; i < 3; i++) expect(over(req(1000), server)).toBeUndefined()
  const refused = over(req(1000), server)!
  expect(refused.status).toBe(429)
  expect(refused.headers.get('x-ably-errorcode')).toBe('42910')
  expect(((await refused.json()) as { error: { code: number } }).error.code).toBe(42910)
  // another connection (another peer port) has its own bound
  expect(over(req(1001), server)).toBeUndefined()
})
