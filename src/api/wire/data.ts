import { toBase64 } from '../../lib/encoding'

/**
 * `data` and `encoding` of a message or presence message in its wire form. Binary data stays
 * binary in msgpack; in text formats it is base64-encoded and `base64` is appended to the
 * encoding, as the hosted service does.
 */
export function setData(
  out: Record<string, unknown>,
  data: string | Uint8Array | undefined,
  encoding: string | undefined,
  binary: boolean,
) {
  if (data instanceof Uint8Array && !binary) {
    out.data = toBase64(data)
    out.encoding = encoding ? `${encoding}/base64` : 'base64'
    return
  }
  if (data !== undefined) out.data = data
  if (encoding) out.encoding = encoding
}
