import { describe, expect, test } from 'bun:test'
import { Ring } from '../../src/core/channels/ring'
import { formatSerial, nextSerial, parseSerial } from '../../src/core/channels/serial'
import type { Message } from '../../src/core/types'

const msg = (i: number, ts = 1000 + i): Message => ({ id: `m${i}`, serial: formatSerial(ts, 0), timestamp: ts })

describe('serials', () => {
  test('string order is numeric order', () => {
    expect(formatSerial(999, 10) < formatSerial(1000, 0)).toBe(true)
    expect(formatSerial(1000, 9) < formatSerial(1000, 10)).toBe(true)
    expect(parseSerial(formatSerial(1234, 56))).toEqual({ ms: 1234, seq: 56 })
  })
  test('never go backwards when the clock does', () => {
    expect(nextSerial(900, 1000, 3)).toEqual({ ms: 1000, seq: 4 })
    expect(nextSerial(1001, 1000, 3)).toEqual({ ms: 1001, seq: 0 })
  })
})

describe('Ring', () => {
  test('keeps the newest `capacity` messages in order', () => {
    const r = new Ring(4, '0')
    for (let i = 0; i < 10; i++) r.push(msg(i))
    expect(r.size).toBe(4)
    expect([0, 1, 2, 3].map((i) => r.at(i).id)).toEqual(['m6', 'm7', 'm8', 'm9'])
  })
  test('after() returns messages strictly after a serial', () => {
    const r = new Ring(8, '0')
    for (let i = 0; i < 6; i++) r.push(msg(i))
    expect(r.after(msg(2).serial).map((m) => m.id)).toEqual(['m3', 'm4', 'm5'])
    expect(r.after(msg(5).serial)).toEqual([])
  })
  test('query pages backwards and forwards with cursors and time bounds', () => {
    const r = new Ring(16, '0')
    for (let i = 0; i < 10; i++) r.push(msg(i))
    const back1 = r.query({ limit: 3, direction: 'backwards' }, 0)
    expect(back1.map((m) => m.id)).toEqual(['m9', 'm8', 'm7'])
    const back2 = r.query({ limit: 3, direction: 'backwards', cursor: back1[2]!.serial }, 0)
    expect(back2.map((m) => m.id)).toEqual(['m6', 'm5', 'm4'])
    const fwd = r.query({ limit: 3, direction: 'forwards', cursor: msg(4).serial }, 0)
    expect(fwd.map((m) => m.id)).toEqual(['m5', 'm6', 'm7'])
    expect(r.query({ limit: 100, direction: 'forwards', start: 1003, end: 1005 }, 0).map((m) => m.id)).toEqual(['m3', 'm4', 'm5'])
    expect(r.query({ limit: 100, direction: 'forwards' }, 1008).map((m) => m.id)).toEqual(['m8', 'm9'])
  })
  test('expire drops old messages', () => {
    const r = new Ring(8, '0')
    for (let i = 0; i < 5; i++) r.push(msg(i))
    r.expire(1003)
    expect(r.oldest()!.id).toBe('m3')
    expect(r.size).toBe(2)
  })
})

describe('Ring floor', () => {
  test('rises to the newest serial dropped by overflow or expiry', () => {
    const r = new Ring(3, 'start')
    for (let i = 0; i < 3; i++) r.push(msg(i))
    expect(r.floor).toBe('start')
    r.push(msg(3))
    expect(r.floor).toBe(msg(0).serial)
    r.push(msg(4))
    expect(r.floor).toBe(msg(1).serial)
    r.expire(1004)
    expect(r.floor).toBe(msg(3).serial)
    expect(r.after(r.floor).map((m) => m.id)).toEqual(['m4'])
  })
})
