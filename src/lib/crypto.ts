import { timingSafeEqual as nodeTimingSafeEqual, randomBytes } from 'node:crypto'

/** Constant-time comparison of two strings (length leaks, content does not). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8')
  const bb = Buffer.from(b, 'utf8')
  if (ab.length !== bb.length) {
    nodeTimingSafeEqual(ab, ab)
    return false
  }
  return nodeTimingSafeEqual(ab, bb)
}

export function hmacSha256(secret: string, data: string, encoding: 'base64' | 'base64url'): string {
  return new Bun.CryptoHasher('sha256', secret).update(data).digest(encoding)
}

export const sha256Hex = (data: string): string => new Bun.CryptoHasher('sha256').update(data).digest('hex')

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
/** Random identifier of `len` alphanumeric characters. */
export function randomId(len: number): string {
  const bytes = randomBytes(len)
  let out = ''
  for (let i = 0; i < len; i++) out += ALNUM[bytes[i]! % ALNUM.length]
  return out
}

/** 256 random bits, base64url: a secret to sign with. */
export const randomSecret = (): string => randomBytes(32).toString('base64url')

/** SHA-256 of the UTF-8 bytes of `data`, base64url without padding. */
export const sha256Base64url = (data: string): string => new Bun.CryptoHasher('sha256').update(data).digest('base64url')
