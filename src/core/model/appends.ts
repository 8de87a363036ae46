import { GatewayError } from '../../errors'
import { fromBase64 } from '../../lib/encoding'
import type { Message } from '../types'

/**
 * Appends to a message as data (see channels/versions.ts for versions as log entries): which
 * entries append, and fragments joined as a subscriber folding them holds them. Pure functions,
 * below every service that delivers or folds appends.
 */

/** The append action on the wire. */
const APPEND = 5

/** Whether an entry replaces the whole message (the original, an update, a delete), or appends to it. */
export const isWhole = (m: Message): boolean => m.kind !== 'mutation' || m.action !== APPEND

type Data = Pick<Message, 'data' | 'encoding'>

/**
 * `fragment` appended to the data of `m`: text to text of the same encoding, bytes to bytes. Text
 * that stands for bytes (an encoding ending in `base64`, as JSON clients send binary) is appended
 * as those bytes. Anything else is 40013.
 */
export function appended(m: Data, fragment: Data): Data {
  const a = asBytes(m)
  const b = asBytes(fragment)
  if (a.data === undefined) return b
  const sameEncoding = (a.encoding ?? '') === (b.encoding ?? '')
  if (sameEncoding && typeof a.data === 'string' && typeof b.data === 'string')
    return withEncoding(a.data + b.data, a.encoding)
  if (sameEncoding && a.data instanceof Uint8Array && b.data instanceof Uint8Array) {
    const out = new Uint8Array(a.data.byteLength + b.data.byteLength)
    out.set(a.data)
    out.set(b.data, a.data.byteLength)
    return withEncoding(out, a.encoding)
  }
  throw new GatewayError(
    40013,
    'Invalid append: the data appended must be of the type and encoding of the message data (text to text, binary to binary)',
  )
}

function asBytes(d: Data): Data {
  if (typeof d.data !== 'string' || !d.encoding) return d
  const steps = d.encoding.split('/')
  if (steps[steps.length - 1] !== 'base64') return d
  return withEncoding(fromBase64(d.data), steps.slice(0, -1).join('/') || undefined)
}

const withEncoding = (data: string | Uint8Array, encoding: string | undefined): Data =>
  encoding ? { data, encoding } : { data }

/** Whether an entry is an append to a message (a log entry of kind `mutation` with action 5). */
export const isAppend = (m: Message): boolean => m.kind === 'mutation' && m.action === APPEND

/**
 * Two appends to one message as one (`a` then `b`): `b` with the data of both, as a subscriber
 * folding them one after the other holds it; undefined when they cannot be joined (text and
 * bytes, different encodings).
 */
export function joinAppends(a: Message, b: Message): Message | undefined {
  let d: Data
  try {
    d = appended(a, b)
  } catch {
    return undefined
  }
  const { encoding: _encoding, ...rest } = b
  return { ...rest, ...withEncoding(d.data!, d.encoding) }
}
