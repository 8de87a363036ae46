/**
 * LiveOnlyKeeper: what a dropped connection's attachment would have been sent of the channel's
 * live-only entries, kept for its resume: annotations in order, the latest summary of each
 * message, only the kinds the attachment delivers, within bounds (past them, counted), in
 * channel order and older than what the new session received itself; it leaves the hub once.
 */
import { expect, test } from 'bun:test'
import { KEPT_ANNOTATIONS, KEPT_SUMMARIES, LiveOnlyKeeper } from '../../src/core/connections/live-only-keeper'
import type { Hub } from '../../src/core/fanout/hub'
import type { Message } from '../../src/core/types'

function fakeHub() {
  const calls: string[] = []
  const hub = {
    add: (app: string, ch: string) => calls.push(`add ${app} ${ch}`),
    remove: (app: string, ch: string) => calls.push(`remove ${app} ${ch}`),
  } as unknown as Hub
  return { hub, calls }
}

let seq = 0
const entry = (kind: Message['kind'], name: string, connectionId?: string): Message =>
  ({
    id: `e${seq}`,
    serial: `01000000000000-${String(seq++).padStart(6, '0')}`,
    timestamp: 0,
    kind,
    name,
    connectionId,
  }) as Message

test('keeps annotations and the latest summary of each message, in channel order; skips the rest', () => {
  const { hub, calls } = fakeHub()
  const k = new LiveOnlyKeeper(hub, 'app', 'ch', 'conn-1', { annotations: true, summaries: true })
  expect(calls).toEqual(['add app ch'])
  const a1 = entry('annotation', 'x')
  const s1 = entry('summary', 'msg-1')
  const plain = entry(undefined, 'a message')
  const a2 = entry('annotation', 'y')
  const s2 = entry('summary', 'msg-1') // replaces s1
  const s3 = entry('summary', 'msg-2')
  k.deliver('ch', [a1, s1, plain, a2])
  k.deliver('ch', [s2, s3])
  expect(k.kept().map((m) => m.serial)).toEqual([a1, a2, s2, s3].map((m) => m.serial))
  // what the new session received itself (from `before` on) is left out
  expect(k.kept(s2.serial).map((m) => m.serial)).toEqual([a1.serial, a2.serial])
  expect(k.missed).toBe(0)
  k.release()
  k.release()
  expect(calls).toEqual(['add app ch', 'remove app ch'])
})

test('only the kinds the attachment delivers; its own annotations not with echo off', () => {
  const { hub } = fakeHub()
  const summariesOnly = new LiveOnlyKeeper(hub, 'app', 'ch', 'c', { annotations: false, summaries: true })
  const noEcho = new LiveOnlyKeeper(hub, 'app', 'ch', 'c', {
    annotations: true,
    summaries: false,
    exceptConnection: 'c',
  })
  const batch = [entry('annotation', 'a', 'c'), entry('annotation', 'b', 'other'), entry('summary', 'm')]
  summariesOnly.deliver('ch', batch)
  noEcho.deliver('ch', batch)
  expect(summariesOnly.kept().map((m) => m.kind)).toEqual(['summary'])
  expect(noEcho.kept().map((m) => m.name)).toEqual(['b'])
})

test('bounded: past the bounds entries are counted, not kept', () => {
  const { hub } = fakeHub()
  const k = new LiveOnlyKeeper(hub, 'app', 'ch', 'c', { annotations: true, summaries: true })
  for (let i = 0; i < KEPT_ANNOTATIONS + 5; i++) k.deliver('ch', [entry('annotation', `a${i}`)])
  for (let i = 0; i < KEPT_SUMMARIES + 3; i++) k.deliver('ch', [entry('summary', `m${i}`)])
  // a newer summary of a message already kept still replaces it
  k.deliver('ch', [entry('summary', 'm0')])
  expect(k.kept().filter((m) => m.kind === 'annotation')).toHaveLength(KEPT_ANNOTATIONS)
  expect(k.kept().filter((m) => m.kind === 'summary')).toHaveLength(KEPT_SUMMARIES)
  expect(k.missed).toBe(5 + 3)
})

test("one connection's keepers share its budget: past it each counts what it let go", () => {
  const { hub } = fakeHub()
  const budget = { left: 3 }
  const kinds = { annotations: true, summaries: true }
  const a = new LiveOnlyKeeper(hub, 'app', 'a', 'c', kinds, budget)
  const b = new LiveOnlyKeeper(hub, 'app', 'b', 'c', kinds, budget)
  a.deliver('a', [entry('annotation', 'x'), entry('summary', 'm1')])
  // a newer summary of a message kept takes its place and its share of the budget
  a.deliver('a', [entry('summary', 'm1')])
  b.deliver('b', [entry('annotation', 'y'), entry('annotation', 'z'), entry('summary', 'm2')])
  expect(a.kept().map((m) => m.name)).toEqual(['x', 'm1'])
  expect(b.kept().map((m) => m.name)).toEqual(['y'])
  expect([a.missed, b.missed, budget.left]).toEqual([0, 2, 0])
})

test('a released keeper gives what it held back to the budget, and can still be read once', () => {
  const { hub } = fakeHub()
  const budget = { left: 3 }
  const k = new LiveOnlyKeeper(hub, 'app', 'ch', 'c', { annotations: true, summaries: true }, budget)
  k.deliver('ch', [entry('annotation', 'a'), entry('summary', 'm')])
  expect(budget.left).toBe(1)
  k.release()
  k.release()
  expect(budget.left).toBe(3)
  expect(k.kept()).toHaveLength(2)
})
