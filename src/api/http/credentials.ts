import type { Credentials } from '../../core/auth/authenticator'

/** Credentials of a REST or SSE request: Authorization header or key / accessToken / access_token query. */
export function credentialsOf(request: Request, query: Record<string, string | undefined>): Credentials {
  const h = request.headers
  return {
    authorization: h.get('authorization'),
    key: query.key,
    accessToken: query.accessToken ?? query.access_token,
    clientIdHeader: h.get('x-ably-clientid'),
    secure: () => request.url.startsWith('https:') || h.get('x-forwarded-proto') === 'https',
  }
}
