/** Small, dependency-free encoding helpers. */
const enc = new TextEncoder()
const dec = new TextDecoder()

export const utf8Encode = (s: string): Uint8Array => enc.encode(s)
export const utf8Decode = (b: Uint8Array): string => dec.decode(b)
export const utf8Length = (s: string): number => Buffer.byteLength(s, 'utf8')

export const toBase64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64')
export const fromBase64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'))
export const base64url = (s: string | Uint8Array): string =>
  (typeof s === 'string' ? Buffer.from(s, 'utf8') : Buffer.from(s)).toString('base64url')
export const fromBase64url = (s: string): string => Buffer.from(s, 'base64url').toString('utf8')
