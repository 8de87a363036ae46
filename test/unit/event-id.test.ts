import { describe, expect, test } from 'bun:test'
import { channelsHash, compactSerial, decodeEventId, encodeEventId } from '../../src/core/fanout/resume-token'
import { formatSerial } from '../../src/core/model/serial'

describe('event ids', () => {
  test('compact serials: base-36 ms, and -seq only when seq > 0', () => {
    expect(compactSerial(formatSerial(1_763_727_000_000, 0))).toBe((1_763_727_000_000).toString(36))
    expect(compactSerial(formatSerial(1_763_727_000_000, 35))).toBe(`${(1_763_727_000_000).toString(36)}-z`)
    expect(compactSerial(formatSerial(1_763_727_000_001, 1_234_567))).toBe(
      `${(1_763_727_000_001).toString(36)}-${(1_234_567).toString(36)}`,
    )
    expect(compactSerial('garbage')).toBe('0')
    expect(compactSerial('')).toBe('0')
  })

  test('every serial survives compact -> event id -> decode, across millisecond changes', () => {
    const channels = ['a', 'b:c']
    const hash = channelsHash(channels)
    let ms = 1_700_000_000_000
    for (let i = 0; i < 2000; i++) {
      ms += i % 7 === 0 ? 1 : 0
      const serials = [formatSerial(ms, i % 5), formatSerial(ms - 3, (i * 31) % 1000)]
      const id = encodeEventId(hash, serials.map(compactSerial))
      expect(decodeEventId(id, channels)).toEqual(serials)
    }
  })

  test('an id of another channel list or a malformed one decodes to nothing', () => {
    const id = encodeEventId(channelsHash(['a']), [compactSerial(formatSerial(1_700_000_000_000, 2))])
    expect(decodeEventId(id, ['b'])).toBeUndefined()
    expect(decodeEventId(`${channelsHash(['a'])}:!!`, ['a'])).toBeUndefined()
  })
})
