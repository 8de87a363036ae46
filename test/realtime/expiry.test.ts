/**
 * Connections that are over, with the official `ably` client: a recovery key of a connection its
 * client closed, or of one dropped and not resumed within connectionStateTtl, gives a new
 * connection with error 80008 (and a key issued after a resume elsewhere stays good).
 */
import { describe, expect, test } from 'bun:test'
import { newConnectionId } from '../../src/core/auth/connection-keys'
import { rawConnected } from '../helpers/realtime-raw'
import {
  collect,
  connectedClient,
  cutSocket,
  FORMATS,
  fresh,
  reach,
  realtimeClient,
  realtimeGateway,
} from '../helpers/realtime'

const STATE_TTL_MS = 1000
// the node sweeps what dropped connections left every quarter of the idle interval
const rt = realtimeGateway({ connectionStateTtlMs: STATE_TTL_MS, realtimeMaxIdleIntervalMs: 1000 })

describe.each(FORMATS)('ably-js Realtime over %s', (_format, binary) => {
  const client = () => connectedClient(rt.port, { key: rt.gw.key }, binary)
  const recover = async (recoveryKey: string) => {
    const c = realtimeClient(rt.port, { key: rt.gw.key, recover: recoveryKey }, binary)
    await reach(c.connection, 'connected')
    return c
  }

  test('a recovery key of a connection its client closed gives a new connection with 80008', async () => {
    const first = await client()
    const recoveryKey = first.connection.createRecoveryKey()!
    const id = first.connection.id!
    first.close()
    await reach(first.connection, 'closed')
    // CLOSED is sent before the record is written: give it a moment
    await Bun.sleep(50)
    const second = await recover(recoveryKey)
    expect(second.connection.id).not.toBe(id)
    expect(second.connection.errorReason?.code).toBe(80008)
  })

  test('dropped and not resumed within connectionStateTtl: its recovery key gives a new connection with 80008', async () => {
    const name = fresh('expired')
    const first = await client()
    await collect(first.channels.get(name))
    const recoveryKey = first.connection.createRecoveryKey()!
    const id = first.connection.id!
    cutSocket(rt.gw, id)
    first.close()
    await Bun.sleep(STATE_TTL_MS + 800)
    const second = await recover(recoveryKey)
    expect(second.connection.id).not.toBe(id)
    expect(second.connection.errorReason?.code).toBe(80008)
    // the new connection serves as any other
    const got = await collect(second.channels.get(name))
    await rt.rest().channels.get(name).publish('n', 'after')
    await got.until(1)
    expect(got.messages.map((m) => m.data)).toEqual(['after'])
  })

  test('within connectionStateTtl the same recovery key resumes the connection', async () => {
    const first = await client()
    const recoveryKey = first.connection.createRecoveryKey()!
    const id = first.connection.id!
    cutSocket(rt.gw, id)
    first.close()
    const second = await recover(recoveryKey)
    expect(second.connection.id).toBe(id)
    expect(second.connection.errorReason).toBeNull()
  })
})

describe('resume keys of connections this node knows nothing of (served elsewhere)', () => {
  // a key as the node that served the connection issued it (the servers share their secret)
  const connectionKey = async (id: string, issuedAt?: number) =>
    rt.gw.core.connectionKeys.issue(
      id,
      await rt.gw.core.auth.authenticate({ key: rt.gw.key, secure: () => false }),
      issuedAt,
    )
  const resume = (key: string) => rawConnected(rt.base, { key: rt.gw.key, resume: key })

  test('a key that expired where it was issued is refused with 80008; a newer key of the same connection resumes it', async () => {
    const id = newConnectionId()
    const older = await connectionKey(id, Date.now() - 60_000)
    const newer = await connectionKey(id)
    // what the first node records when the state it kept for the older key expires
    await rt.gw.core.endedConnections.expired(older)
    const a = await resume(older)
    expect(a.connected.connectionId).not.toBe(id)
    expect(a.connected.error.code).toBe(80008)
    a.raw.close()
    const b = await resume(newer)
    expect(b.connected.connectionId).toBe(id)
    expect(b.connected.error).toBeUndefined()
    b.raw.close()
  })

  test('any key of a connection its client closed is refused with 80008', async () => {
    const id = newConnectionId()
    await rt.gw.core.endedConnections.closed(id)
    const { raw, connected } = await resume(await connectionKey(id))
    expect(connected.connectionId).not.toBe(id)
    expect(connected.error.code).toBe(80008)
    raw.close()
  })
})
