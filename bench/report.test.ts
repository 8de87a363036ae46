import { expect, test } from 'bun:test'
import { boundOf } from './lib/bound'
import { headline } from './lib/report'

test('a smoke run judges no target; a measuring run does', () => {
  const h = { name: 'gateway JSON ÷ hello', value: 0.35, unit: '', target: '≥ 0.65', met: false }
  expect(headline(h, true)).toContain('not judged in a smoke run')
  expect(headline(h, true)).not.toContain('not met')
  expect(headline(h, false)).toContain('(target ≥ 0.65: not met)')
  expect(headline({ ...h, met: true }, false)).toContain(': met)')
})

test('each figure names what bounded it on its machine', () => {
  const idle = { cores: 2, load: 1 }
  expect(boundOf({ generator: 98, server: 60 }, idle)).toBe('generator CPU (98%)')
  expect(boundOf({ generator: 40, server: 99 }, idle)).toBe('server CPU (99%)')
  expect(boundOf({ gateway: 95, subscribers: 92, publisher: 10 }, idle)).toBe(
    'gateway CPU (95%) + subscribers CPU (92%)',
  )
  expect(boundOf({ gateway: 80, subscribers: 70, publisher: 40 }, idle)).toBe('all 2 cores (190% together)')
  expect(boundOf({ gateway: 46, subscribers: 26, publisher: 12 }, { cores: 2, load: 7.2 })).toBe(
    "other processes' CPU (load 7.2 on 2 cores)",
  )
  expect(boundOf({ generator: 10, server: 20, 'redis-server': undefined }, idle)).toBe(
    'no CPU (waits: latency, flow control)',
  )
})
