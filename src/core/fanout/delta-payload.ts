import type { Message } from '../types'
import { fromBase64, utf8Encode } from '../../lib/encoding'

/**
 * A message's data as a delta client keeps it (ably-js `decodeData`, RTL19): the bytes the next
 * delta is decoded against, and the encoding steps a delta of this message carries before its
 * `vcdiff` step. Binary data is itself; data whose encoding ends in `base64` is the decoded
 * bytes (the client keeps those); a string is its UTF-8 bytes, so a delta of it adds a
 * `utf-8` step (`utf-8/vcdiff`, `json/utf-8/vcdiff`). Whatever the steps, decoding the delta
 * gives the client at each later step exactly what the whole message would have.
 */
export interface Payload {
  bytes: Uint8Array
  /** The encoding before `vcdiff` on a delta of this message (undefined: none). */
  steps?: string
}

/** Steps every client decodes; a message with another one keeps no base (the client's decode fails). */
const KNOWN_STEP = /^(?:json|utf-8|base64|cipher\+[\w-]+)$/

/** The payload of a message, or undefined when it has none a client would keep as a base. */
export function payloadOf(m: Message): Payload | undefined {
  const { data, encoding } = m
  if (data === undefined) return undefined
  if (encoding && !encoding.split('/').every((s) => KNOWN_STEP.test(s))) return undefined
  if (data instanceof Uint8Array) return { bytes: data, steps: encoding || undefined }
  if (encoding === 'base64') return { bytes: fromBase64(data) }
  if (encoding?.endsWith('/base64')) return { bytes: fromBase64(data), steps: encoding.slice(0, -7) }
  return { bytes: utf8Encode(data), steps: encoding ? `${encoding}/utf-8` : 'utf-8' }
}
