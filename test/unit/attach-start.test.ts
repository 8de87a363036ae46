import { expect, test } from 'bun:test'
import type { AttachRequest } from '../../src/core/connections/attach-request'
import { decideStart } from '../../src/core/connections/attach-start'
import { Action, Flag } from '../../src/core/connections/protocol'

/** The fresh / rewind / resume decision of an ATTACH (core/connections/attach-start.ts), alone. */

const req = (params: Record<string, string> = {}) => ({ channel: 'c', params }) as unknown as AttachRequest
const attach = (more: Record<string, unknown> = {}) => ({ action: Action.ATTACH, channel: 'c', ...more })
const retained = { canResume: async () => true }
const expired = { canResume: async () => false }

test('a first attach starts at the head; with rewind, rewound (a count, or a window of at most 100)', async () => {
  expect(await decideStart(req(), attach(), 'app', retained)).toEqual({ kind: 'fresh' })
  expect(await decideStart(req({ rewind: '5' }), attach(), 'app', retained)).toMatchObject({ kind: 'rewind', count: 5 })
  expect(await decideStart(req({ rewind: '2m' }), attach(), 'app', retained)).toEqual({
    kind: 'rewind',
    count: 100,
    ms: 120_000,
  })
})

test('an attach that resumes replays nothing by rewind: RESUMED after its channelSerial, or at the head with 90003', async () => {
  const serial = '01700000000000-000003'
  expect(await decideStart(req({ rewind: '5' }), attach({ channelSerial: serial }), 'app', retained)).toEqual({
    kind: 'resume',
    from: serial,
  })
  const lost = await decideStart(req({ rewind: '5' }), attach({ channelSerial: serial }), 'app', expired)
  expect(lost.kind).toBe('fresh')
  expect(lost.kind === 'fresh' && lost.error?.code).toBe(90003)
  expect(await decideStart(req({ rewind: '5' }), attach({ flags: Flag.ATTACH_RESUME }), 'app', retained)).toEqual({
    kind: 'fresh',
  })
})

test('a malformed rewind fails the attach (40003), resuming or not, before the resume point is looked up', async () => {
  let asked = false
  const look = { canResume: async () => ((asked = true), true) }
  for (const pm of [attach(), attach({ channelSerial: '01700000000000-000003' })])
    await expect(decideStart(req({ rewind: 'soon' }), pm, 'app', look)).rejects.toMatchObject({ code: 40003 })
  expect(asked).toBe(false)
})
