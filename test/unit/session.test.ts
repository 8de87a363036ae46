import { expect, test } from 'bun:test'
import { CapabilityMatcher } from '../../src/core/auth/capability'
import type { Principal } from '../../src/core/auth/principal'
import { formatSerial } from '../../src/core/channels/serial'
import { Hub } from '../../src/core/fanout/hub'
import { StreamSession, type SessionSink } from '../../src/core/fanout/session'
import type { Broker, BrokerListener } from '../../src/core/ports'
import type { Message } from '../../src/core/types'
import { GatewayError } from '../../src/errors'

const msg = (n: number): Message => ({ id: `m${n}`, serial: formatSerial(1000 + n, 0), timestamp: 1000 + n, data: String(n) })

/** A broker whose replay read is slow, so live deliveries race it (as on a networked backend). */
function racingBroker(retained: Message[], gapBelow = '') {
  const listeners = new Set<BrokerListener>()
  let releaseRead!: () => void
  const readStarted = Promise.withResolvers<void>()
  const broker: Partial<Broker> = {
    subscribe: (_a, _c, l) => { listeners.add(l); return () => listeners.delete(l) },
    position: async () => retained[retained.length - 1]!.serial,
    history: async () => [],
    readAfter: async (_a, _c, after) => {
      readStarted.resolve()
      await new Promise<void>((r) => { releaseRead = r })
      return { messages: retained.filter((m) => m.serial > after), gap: after < gapBelow }
    },
  }
  return {
    broker: broker as Broker,
    readStarted: readStarted.promise,
    release: () => releaseRead(),
    emit: (msgs: Message[]) => { for (const l of listeners) l('app', 'ch', msgs) },
  }
}

const principal: Principal = { kind: 'basic', appId: 'app', accountId: 'acc', keyName: 'app.k', capability: new CapabilityMatcher({ '*': ['*'] }) }

function sink() {
  const got: string[] = []
  const notices: number[] = []
  const s: SessionSink = {
    begin: () => {},
    deliver: (_i, batch) => { for (const m of batch) got.push(m.id) },
    notice: (e: GatewayError) => notices.push(e.code),
    end: () => {},
    close: () => {},
  }
  return { s, got, notices }
}

test('resume: live messages racing the replay are delivered once, in order, after it', async () => {
  const all = Array.from({ length: 10 }, (_, i) => msg(i))
  const rb = racingBroker(all.slice(0, 8))
  const hub = new Hub(rb.broker)
  const out = sink()
  const session = new StreamSession(hub, rb.broker, { now: () => 0 }, principal, 'c1', ['ch'], out.s)
  const started = session.start({ resumeFrom: [msg(2).serial], replayLimit: 100 })
  await rb.readStarted
  // while the replay read is in flight: messages 6..9 arrive live (6 and 7 are also in the replay)
  rb.emit(all.slice(6, 8))
  rb.emit(all.slice(8, 10))
  await new Promise((r) => setImmediate(r))
  rb.release()
  await started
  expect(out.got).toEqual(['m3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9'])
  expect(session.positions[0]).toBe(msg(9).serial)
  session.close()
  expect(hub.count('app', 'ch')).toBe(0)
})

test('resume across a gap reports it before continuing', async () => {
  const rb = racingBroker([msg(5), msg(6)], msg(4).serial)
  const out = sink()
  const session = new StreamSession(new Hub(rb.broker), rb.broker, { now: () => 0 }, principal, 'c2', ['ch'], out.s)
  const started = session.start({ resumeFrom: [msg(1).serial], replayLimit: 100 })
  await rb.readStarted
  rb.release()
  await started
  expect(out.notices).toEqual([80008])
  expect(out.got).toEqual(['m5', 'm6'])
  session.close()
})
