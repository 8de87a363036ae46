import { formatSerial, parseSerial } from '../model/serial'
import type { Broker, PublishOptions } from '../ports'
import type { Message } from '../types'

/**
 * The channel message with exactly this serial, if the channel's history still holds it (other
 * entry kinds and serials not in the broker's own form are never found). One history read of the
 * serial's millisecond, starting just before it.
 */
export async function findMessage(
  broker: Broker,
  appId: string,
  channel: string,
  serial: string,
  opts: PublishOptions,
): Promise<Message | undefined> {
  const s = parseSerial(serial)
  if (!s || formatSerial(s.ms, s.seq) !== serial) return undefined
  const before = s.seq > 0 ? formatSerial(s.ms, s.seq - 1) : formatSerial(s.ms - 1, 999_999)
  const [m] = await broker.history(
    appId,
    channel,
    { direction: 'forwards', cursor: before, start: s.ms, end: s.ms, limit: 1 },
    opts,
  )
  return m?.serial === serial ? m : undefined
}
