import { expect, test } from 'bun:test'
import { checkPublish, isServiceChannel, qualifierOf } from '../../src/core/model/sub-channels'
import type { MessageDraft } from '../../src/core/types'

const eph = (name?: string): MessageDraft => ({ id: '', name, extras: { ephemeral: true } })
const stored = (name?: string): MessageDraft => ({ id: '', name })
const code = (f: () => unknown) => {
  try {
    f()
  } catch (e) {
    return (e as { code?: number }).code
  }
  return undefined
}

test('qualifiers of sub-channel names', () => {
  expect(qualifierOf('plain')).toBeUndefined()
  expect(qualifierOf('ns:plain')).toBeUndefined()
  expect(qualifierOf('room::$chat')).toBe('chat')
  expect(qualifierOf('ns:deck::$cursors')).toBe('cursors')
  expect(qualifierOf('game::$objects:board')).toBe('objects')
})

test('what each sub-channel takes from channel publishes', () => {
  expect(checkPublish('plain', [stored('a')])).toBe(false)
  expect(checkPublish('plain', [eph('a')])).toBe(true)
  expect(code(() => checkPublish('plain', [eph('a'), stored('b')]))).toBe(40003)
  expect(checkPublish('deck::$cursors', [stored('cursorUpdate')])).toBe(false)
  expect(checkPublish('deck::$space', [stored()])).toBe(false)
  // chat rooms: ephemeral only, never under the chat service's own names
  expect(checkPublish('room::$chat', [eph('typing.started')])).toBe(true)
  expect(checkPublish('room::$chat', [eph('roomReaction')])).toBe(true)
  expect(code(() => checkPublish('room::$chat', [stored('roomReaction')]))).toBe(40160)
  expect(code(() => checkPublish('room::$chat', [eph('chat.message')]))).toBe(40160)
  expect(code(() => checkPublish('room::$chat', [eph('[meta]occupancy')]))).toBe(40160)
  // LiveObjects and unknown qualifiers stay reserved
  expect(code(() => checkPublish('game::$objects:board', [eph('x')]))).toBe(40160)
  expect(code(() => checkPublish('x::$other', [stored('x')]))).toBe(40160)
})

test('service channels keep their history whatever the namespace rules say; Spaces channels do not', () => {
  expect(isServiceChannel('room::$chat')).toBe(true)
  expect(isServiceChannel('game::$objects:board')).toBe(true)
  expect(isServiceChannel('deck::$cursors')).toBe(false)
  expect(isServiceChannel('deck::$space')).toBe(false)
  expect(isServiceChannel('plain')).toBe(false)
})
