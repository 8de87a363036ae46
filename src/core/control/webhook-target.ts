import { GatewayError } from '../../errors'
import { privateHostReason } from '../../lib/addresses'

/** Headers one webhook rule may set, and how long a value may be. */
export const MAX_TARGET_HEADERS = 20
const MAX_HEADER_VALUE = 4096
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/
/** Headers the gateway sets itself, or that would change how the request is framed or routed. */
const RESERVED = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-authorization',
  'proxy-connection',
])

const bad = (m: string) => new GatewayError(40000, m)

/**
 * A webhook rule's target as a tenant may set it: an http(s) URL whose host is not, by its text
 * alone, a loopback, private, link-local or unspecified address (unless `allowPrivate`), and
 * headers that are valid HTTP and not ones the gateway sets. Names are checked again against
 * their resolved addresses at every delivery (lib/http-post.ts).
 */
export function checkWebhookTarget(
  rawUrl: unknown,
  rawHeaders: unknown,
  allowPrivate: boolean,
): { url: string; headers?: Array<{ name: string; value: string }> } {
  let url: URL | undefined
  try {
    url = new URL(String(rawUrl))
  } catch {
    /* below */
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw bad('target.url must be an http(s) URL')
  const reason = allowPrivate ? undefined : privateHostReason(url)
  if (reason)
    throw bad(
      `target.url must reach a public address: ${reason} (loopback, private, link-local and unspecified ` +
        'addresses are refused unless the operator sets WEBHOOK_ALLOW_PRIVATE_TARGETS)',
    )
  if (rawHeaders === undefined || rawHeaders === null) return { url: url.toString() }
  if (
    !Array.isArray(rawHeaders) ||
    !rawHeaders.every((h) => typeof h?.name === 'string' && typeof h?.value === 'string')
  )
    throw bad('target.headers must be an array of {name, value}')
  if (rawHeaders.length > MAX_TARGET_HEADERS) throw bad(`target.headers: at most ${MAX_TARGET_HEADERS} headers`)
  const headers = rawHeaders.map((h: { name: string; value: string }) => {
    if (!TOKEN.test(h.name)) throw bad(`target.headers: "${h.name.slice(0, 64)}" is not a valid header name`)
    if (RESERVED.has(h.name.toLowerCase())) throw bad(`target.headers: ${h.name} is set by the gateway`)
    if (h.value.length > MAX_HEADER_VALUE || CONTROL.test(h.value))
      throw bad(
        `target.headers: the value of ${h.name} must be at most ${MAX_HEADER_VALUE} characters without control characters`,
      )
    return { name: h.name, value: h.value }
  })
  return { url: url.toString(), headers }
}
