import { Packr } from 'msgpackr'
import { formatSerial, parseSerial } from '../../core/model/serial'
import type { Message, MessageDraft } from '../../core/types'

/** How messages are encoded in Redis (msgpack) and how stream ids map to serials. */
const packr = new Packr({ useRecords: false })

/** The stored body: everything but serial and timestamp, which the stream id carries. */
export function packDraft(d: MessageDraft): Buffer {
  // a draft rarely carries a timestamp (none from a client): packed as it is, no copy
  if (!('timestamp' in d)) return packr.pack(d)
  const { timestamp: _t, ...rest } = d
  return packr.pack(rest)
}

export function messageFromEntry(id: string, body: Uint8Array): Message {
  const m = packr.unpack(body) as Message
  const [ms, seq] = id.split('-')
  m.serial = formatSerial(Number(ms), Number(seq))
  m.timestamp = Number(ms)
  return m
}

export const serialFromId = (id: string): string => {
  const [ms, seq] = id.split('-')
  return formatSerial(Number(ms), Number(seq))
}

export function idFromSerial(serial: string): string {
  const p = parseSerial(serial)
  return p ? `${p.ms}-${p.seq}` : '0-0'
}

export const pack = (v: unknown): Buffer => packr.pack(v)
export const unpack = <T>(b: Uint8Array): T => packr.unpack(b) as T

/**
 * Notification payload written by the publish script: `<prev id> ` then, per new message,
 * `<id> <body length> <body>`. Returns the previous stream id and the messages in order.
 */
export function parseNotification(buf: Buffer): { prev: string; messages: Message[] } {
  let pos = 0
  const token = () => {
    const sp = buf.indexOf(0x20, pos)
    const t = buf.toString('latin1', pos, sp)
    pos = sp + 1
    return t
  }
  const prev = token()
  const messages: Message[] = []
  while (pos < buf.length) {
    const id = token()
    const len = Number(token())
    messages.push(messageFromEntry(id, buf.subarray(pos, pos + len)))
    pos += len
  }
  return { prev, messages }
}
