import { expect, test } from 'bun:test'
import { ROOT_KEY, basic, useGateway } from '../helpers/gateway'
import { RawConnection, parseResponse } from '../helpers/raw-http'
import { messages, openSse } from '../helpers/sse'

/**
 * Connection lifetimes over real sockets: a keep-alive connection idle for
 * IDLE_CONNECTION_TIMEOUT_MS is closed (the runtime checks every ~4 s, so it closes within the
 * setting plus 4 s), while an event stream with nothing to send stays open past it.
 */
const ctx = useGateway({ idleConnectionTimeoutMs: 1000, requestBodyTimeoutMs: 500, sseKeepaliveMs: 60_000 })

test('an idle keep-alive connection is closed, an event stream stays open past the idle timeout', async () => {
  const stream = await openSse(`${ctx.base}/sse?v=1.2&channels=quiet&key=${encodeURIComponent(ROOT_KEY)}`)
  expect(stream.status).toBe(200)
  const idle = await RawConnection.open(ctx.base)
  // taken before the request: the server's idle timer cannot start earlier, however late its answer is read here
  const opened = Date.now()
  idle.write('GET /health HTTP/1.1\r\nHost: ctx.gw.test\r\n\r\n')
  await idle.until((t) => parseResponse(t) !== undefined)
  expect(idle.response()?.status).toBe(200)

  await idle.until(() => false, 10_000)
  expect(idle.isClosed).toBe(true)
  expect(Date.now() - opened).toBeGreaterThanOrEqual(900)

  // the stream has had nothing to send all this time (keepalives every 60 s), and still delivers
  await Bun.sleep(Math.max(0, 6000 - (Date.now() - opened)))
  const r = await fetch(`${ctx.base}/channels/quiet/messages`, {
    method: 'POST',
    headers: { authorization: basic(ROOT_KEY), 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'late', data: 'still here' }),
  })
  expect(r.status).toBe(201)
  await stream.until((e) => messages(e).length === 1)
  expect(JSON.parse(messages(stream.events)[0]!.data)).toMatchObject({ name: 'late', data: 'still here' })
  stream.close()
}, 30_000)
