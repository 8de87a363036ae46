import { lookup as dnsLookup } from 'node:dns/promises'
import http from 'node:http'
import https from 'node:https'
import { isAddressLiteral, isPublicAddress } from './addresses'

/** Sends one JSON POST; resolves with the HTTP status (0: no answer or a network error). */
export type HttpPost = (url: string, headers: Record<string, string>, body: unknown) => Promise<number>

/** Thrown by a guarded poster when the target resolves to an address it may not reach; nothing was sent. */
export class TargetRefused extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TargetRefused'
  }
}

/** Resolves a host name to its addresses (the system resolver unless a test passes another). */
export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>
const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true })

export interface PosterOptions {
  /** Allow loopback, private, link-local and other non-public addresses (operator-set targets, tests). */
  allowPrivate: boolean
  timeoutMs?: number
  resolve?: Resolver
}

type LookupCallback = (
  err: Error | null,
  address: string | Array<{ address: string; family: number }>,
  family?: number,
) => void

/**
 * A JSON poster whose connections go only where `allowPrivate` permits. The host name is resolved
 * once, every address it resolves to is checked (one private address refuses the target: a name
 * answering both is how rebinding attacks start), and the socket connects to the checked address
 * itself, so a second resolution cannot swap it (DNS rebinding). TLS still verifies the name.
 * Redirects are not followed: a 3xx is just the answer's status.
 */
export function createPoster(opts: PosterOptions): HttpPost {
  const resolve = opts.resolve ?? systemResolver
  // pooled sockets are reused per host: each poster keeps its own, so a socket another policy
  // allowed is never reused here
  const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) }
  const timeoutMs = opts.timeoutMs ?? 10_000
  const lookup = (host: string, options: { all?: boolean }, cb: LookupCallback) => {
    resolve(host).then(
      (all) => {
        const refused = opts.allowPrivate ? undefined : all.find((a) => !isPublicAddress(a.address))
        if (!all.length) cb(new Error(`${host} has no address`), '')
        else if (refused) cb(new TargetRefused(`${host} resolves to ${refused.address}, not a public address`), '')
        else if (options.all) cb(null, [all[0]!])
        else cb(null, all[0]!.address, all[0]!.family)
      },
      (e: Error) => cb(e, ''),
    )
  }
  return (url, headers, body) => {
    const u = new URL(url)
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname
    if (!opts.allowPrivate && isAddressLiteral(host) && !isPublicAddress(host))
      return Promise.reject(new TargetRefused(`${u.hostname} is not a public address`))
    const payload = JSON.stringify(body)
    const client = u.protocol === 'https:' ? https : http
    return new Promise<number>((done, fail) => {
      const req = client.request(
        u,
        {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
          lookup: lookup as never,
          agent: agents[u.protocol as 'http:' | 'https:'],
          signal: AbortSignal.timeout(timeoutMs),
        },
        (res) => {
          res.resume()
          res.on('end', () => done(res.statusCode ?? 0))
          res.on('error', () => done(0))
        },
      )
      req.on('error', (e) => (e instanceof TargetRefused ? fail(e) : done(0)))
      req.end(payload)
    })
  }
}
