import { describe, expect, test } from 'bun:test'
import { checkChannelName } from '../../src/core/model/names'
import { GatewayError } from '../../src/errors'

/** What a name's check answers: the name, or the error's code and message. */
function outcome(name: unknown): string {
  try {
    return `ok ${checkChannelName(name)}`
  } catch (e) {
    return e instanceof GatewayError ? `${e.code} ${e.message}` : `thrown ${String(e)}`
  }
}

/** The rules one by one, as the hosted service states them (the check folds them into one pass). */
function expected(name: string): string {
  if (name.length === 0) return '40010 Invalid channel name: must be a non-empty string'
  if (name.length > 1024) return '40010 Invalid channel name: longer than 1024 characters'
  if (name.startsWith('[')) return '40010 Invalid channel name: qualified and meta channels are not supported here'
  if (name.startsWith(':')) return '40010 Invalid channel name: must not start with ":"'
  if (/[\x00-\x1f\x7f]/.test(name)) return '40010 Invalid channel name: control characters are not allowed'
  if (!name.isWellFormed()) return '40010 Invalid channel name: not well-formed Unicode'
  return `ok ${name}`
}

describe('channel names', () => {
  test('control characters, DEL and lone surrogates anywhere are refused; pairs, spaces and other text are names', () => {
    const cases = [
      'a',
      'room::$chat',
      'ns:room',
      'x\u0000',
      '\u001fx',
      'a\u007fb',
      'a\u0080b',
      'ok 😀',
      '\ud83d\ude00',
      'a\ud800',
      '\udc00a',
      '\ude00\ud83d',
      'b\ud800\u0001',
      '\u0001\ud800',
      'é日本',
      ' ',
      ':x',
      '[meta]x',
    ]
    for (const name of cases) expect(outcome(name)).toBe(expected(name))
  })

  test('random names of ASCII, controls, surrogates and other text: the same answer as the rules one by one', () => {
    const units = [
      0x00, 0x09, 0x1f, 0x20, 0x3a, 0x5b, 0x61, 0x7e, 0x7f, 0x80, 0xe9, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000,
      0xffff,
    ]
    let seed = 7
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31)
    for (let n = 0; n < 5000; n++) {
      const length = 1 + (next() % 12)
      let name = ''
      for (let i = 0; i < length; i++) name += String.fromCharCode(units[next() % units.length]!)
      expect(outcome(name)).toBe(expected(name))
    }
  })

  test('not a string, empty or too long: 40010', () => {
    expect(outcome(undefined)).toBe('40010 Invalid channel name: must be a non-empty string')
    expect(outcome(5)).toBe('40010 Invalid channel name: must be a non-empty string')
    expect(outcome('')).toBe(expected(''))
    expect(outcome('a'.repeat(1025))).toBe(expected('a'.repeat(1025)))
    expect(outcome('a'.repeat(1024))).toBe(`ok ${'a'.repeat(1024)}`)
  })
})
