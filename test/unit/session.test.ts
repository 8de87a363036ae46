import { expect, test } from 'bun:test'
import { CapabilityMatcher } from '../../src/core/auth/capability'
import type { Principal } from '../../src/core/auth/principal'
import { formatSerial } from '../../src/core/model/serial'
import { Hub } from '../../src/core/fanout/hub'
import { StreamSession, type SessionSink } from '../../src/core/fanout/session'
import type { Broker, BrokerListener } from '../../src/core/ports'
import type { Message } from '../../src/core/types'
import { GatewayError } from '../../src/errors'
import { systemClock, systemTimers } from '../../src/lib/clock'

const msg = (n: number): Message => ({
  id: `m${n}`,
  serial: formatSerial(1000 + n, 0),
  timestamp: 1000 + n,
  data: String(n),
})

/** A broker whose replay read is slow, so live deliveries race it (as on a networked backend). */
function racingBroker(retained: Message[], gapBelow = '') {
  const listeners = new Set<BrokerListener>()
  let releaseRead!: () => void
  const readStarted = Promise.withResolvers<void>()
  const broker: Partial<Broker> = {
    subscribe: (_a, _c, l) => {
      listeners.add(l)
      return () => listeners.delete(l)
    },
    position: async () => retained[retained.length - 1]!.serial,
    history: async () => [],
    readAfter: async (_a, _c, after) => {
      readStarted.resolve()
      await new Promise<void>((r) => {
        releaseRead = r
      })
      return { messages: retained.filter((m) => m.serial > after), gap: after < gapBelow }
    },
  }
  return {
    broker: broker as Broker,
    readStarted: readStarted.promise,
    release: () => releaseRead(),
    emit: (msgs: Message[]) => {
      for (const l of listeners) l('app', 'ch', msgs)
    },
  }
}

const principal: Principal = {
  kind: 'basic',
  appId: 'app',
  accountId: 'acc',
  keyName: 'app.k',
  capability: new CapabilityMatcher({ '*': ['*'] }),
}

function sink() {
  const got: string[] = []
  const notices: number[] = []
  const s: SessionSink = {
    begin: () => {},
    deliver: (_i, batch) => {
      for (const m of batch) got.push(m.id)
      return true
    },
    notice: (e: GatewayError) => notices.push(e.code),
    end: () => {},
    close: () => {},
  }
  return { s, got, notices }
}

test('resume: live messages racing the replay are delivered once, in order, after it', async () => {
  const all = Array.from({ length: 10 }, (_, i) => msg(i))
  const rb = racingBroker(all.slice(0, 8))
  const hub = new Hub(rb.broker, systemClock, systemTimers)
  const out = sink()
  const session = new StreamSession(hub, rb.broker, { now: () => 0 }, systemTimers, principal, 'c1', ['ch'], out.s)
  const started = session.start({ resumeFrom: [msg(2).serial] })
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
  const session = new StreamSession(
    new Hub(rb.broker, systemClock, systemTimers),
    rb.broker,
    { now: () => 0 },
    systemTimers,
    principal,
    'c2',
    ['ch'],
    out.s,
  )
  const started = session.start({ resumeFrom: [msg(1).serial] })
  await rb.readStarted
  rb.release()
  await started
  expect(out.notices).toEqual([80008])
  expect(out.got).toEqual(['m5', 'm6'])
  session.close()
})

/** A broker whose log is an array the test appends to; readAfter pages it like the real ones. */
function logBroker() {
  const log: Message[] = []
  const listeners = new Set<BrokerListener>()
  let floor = ''
  const broker: Partial<Broker> = {
    subscribe: (_a, _c, l) => {
      listeners.add(l)
      return () => listeners.delete(l)
    },
    position: async () => log.at(-1)?.serial ?? formatSerial(999, 0),
    history: async () => [],
    readAfter: async (_a, _c, after, limit) => ({
      messages: log.filter((m) => m.serial > after).slice(0, limit),
      gap: after < floor,
    }),
  }
  return {
    broker: broker as Broker,
    publish(...ms: Message[]) {
      log.push(...ms)
      for (const l of listeners) l('app', 'ch', ms)
    },
    /** Retention drops everything up to and including `serial`. */
    dropThrough(serial: string) {
      floor = serial
      log.splice(
        0,
        log.findIndex((m) => m.serial > serial),
      )
    },
  }
}

/** A sink that takes `room` batches, then reports itself full until `room` is raised again. */
function fullingSink(room: number) {
  const got: string[] = []
  const ended: number[] = []
  const s: SessionSink = {
    begin: () => {},
    deliver: (_i, batch) => {
      for (const m of batch) got.push(m.id)
      return --state.room > 0
    },
    notice: () => {},
    end: (e: GatewayError) => ended.push(e.code),
    close: () => {},
  }
  const state = { room, s, got, ended }
  return state
}

const turn = () => new Promise((r) => setImmediate(r))

test('a full sink pauses the session at its position; once drained it catches up from the log, each entry once', async () => {
  const lb = logBroker()
  const hub = new Hub(lb.broker, systemClock, systemTimers)
  const out = fullingSink(2)
  const session = new StreamSession(hub, lb.broker, { now: () => 0 }, systemTimers, principal, 'c3', ['ch'], out.s)
  await session.start({})
  lb.publish(msg(1))
  await turn()
  lb.publish(msg(2)) // the sink is full after this one
  await turn()
  for (let i = 3; i <= 2500; i++) lb.publish(msg(i)) // arrives while paused: dropped live, kept in the log
  await turn()
  expect(out.got).toEqual(['m1', 'm2'])
  out.room = 1_000_000
  await session.drained()
  lb.publish(msg(2501))
  await turn()
  expect(out.got).toEqual(Array.from({ length: 2501 }, (_, i) => `m${i + 1}`))
  expect(out.ended).toEqual([])
  session.close()
})

test('a paused session whose position left retention is cut (80020) when it drains, never silently skipped', async () => {
  const lb = logBroker()
  const out = fullingSink(1)
  const session = new StreamSession(
    new Hub(lb.broker, systemClock, systemTimers),
    lb.broker,
    { now: () => 0 },
    systemTimers,
    principal,
    'c4',
    ['ch'],
    out.s,
  )
  await session.start({})
  lb.publish(msg(1))
  await turn()
  for (let i = 2; i <= 10; i++) lb.publish(msg(i))
  await turn()
  lb.dropThrough(msg(5).serial)
  out.room = 100
  await session.drained()
  expect(out.got).toEqual(['m1'])
  expect(out.ended).toEqual([80020])
})
