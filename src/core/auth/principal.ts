import type { CapabilityMatcher } from './capability'

/** Who is calling, as established from credentials; everything the routes need to authorise. */
export interface Principal {
  kind: 'basic' | 'token' | 'jwt'
  appId: string
  accountId: string
  keyName: string
  /** `undefined`: anonymous; `'*'`: may act as any clientId; otherwise the identified client. */
  clientId?: string
  capability: CapabilityMatcher
  /** Token expiry (ms); undefined for Basic auth. */
  expires?: number
  /** The app accepts only requests that arrived over TLS. */
  tlsOnly?: boolean
}

/** The clientId a message or connection is attributed to, checking it against the credentials. */
export function effectiveClientId(p: Principal, requested: string | undefined): string | undefined | null {
  if (requested === undefined || requested === null) return p.clientId === '*' ? undefined : p.clientId
  if ((p.kind === 'basic' && p.clientId === undefined) || p.clientId === '*' || p.clientId === requested) return requested
  return null
}
