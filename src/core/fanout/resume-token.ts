import { formatSerial, parseSerial } from '../model/serial'

/**
 * Event ids of the event stream: `<hash>:<pos>.<pos>...` — the hash of the stream's channel list,
 * then the last delivered serial of every channel in list order (compact: base-36 ms, and
 * `-seq` when seq > 0). It is all a node needs to resume every channel exactly, with no
 * per-connection state anywhere.
 */
export function channelsHash(channels: string[]): string {
  let h = 0x811c9dc5
  const s = channels.join('\n')
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(36)
}

/** Last ms part seen and its base-36 text: consecutive serials mostly share the millisecond. */
let lastMsText = ''
let lastMs36 = ''

/** Called for every delivered message: no regex, and the ms part is converted once per millisecond. */
export function compactSerial(serial: string): string {
  const dash = serial.indexOf('-')
  const msText = serial.slice(0, dash)
  if (msText !== lastMsText) {
    const ms = dash > 0 && dash <= 16 ? Number(msText) : NaN
    if (!Number.isInteger(ms)) return compactChecked(serial)
    lastMsText = msText
    lastMs36 = ms.toString(36)
  }
  const seqText = serial.slice(dash + 1)
  if (seqText === '000000') return lastMs36
  const seq = seqText.length <= 10 ? Number(seqText) : NaN
  if (!Number.isInteger(seq) || seq < 0) return compactChecked(serial)
  return seq ? `${lastMs36}-${seq.toString(36)}` : lastMs36
}

function compactChecked(serial: string): string {
  const p = parseSerial(serial)
  if (!p) return '0'
  return p.seq ? `${p.ms.toString(36)}-${p.seq.toString(36)}` : p.ms.toString(36)
}

function expandSerial(c: string): string | undefined {
  const m = /^([0-9a-z]{1,11})(?:-([0-9a-z]{1,7}))?$/.exec(c)
  if (!m) return undefined
  return formatSerial(parseInt(m[1]!, 36), m[2] ? parseInt(m[2], 36) : 0)
}

export function encodeEventId(hash: string, parts: string[]): string {
  return `${hash}:${parts.join('.')}`
}

/** Positions per channel from an event id, or undefined when it is malformed or names another channel list. */
export function decodeEventId(id: string, channels: string[]): string[] | undefined {
  const colon = id.indexOf(':')
  if (colon < 0 || id.slice(0, colon) !== channelsHash(channels)) return undefined
  const parts = id.slice(colon + 1).split('.')
  if (parts.length !== channels.length) return undefined
  const out: string[] = []
  for (const p of parts) {
    const s = expandSerial(p)
    if (s === undefined) return undefined
    out.push(s)
  }
  return out
}
