import type { Credentials } from '../../core/auth/authenticator'

/**
 * Credentials of a REST or SSE request: Authorization header or key / accessToken / access_token
 * query. One object, whose `secure` is a method rather than a closure made per request.
 */
class RequestCredentials implements Credentials {
  authorization: string | null
  key: string | undefined
  accessToken: string | undefined
  clientIdHeader: string | null

  constructor(
    private readonly request: Request,
    query: Record<string, string | undefined>,
  ) {
    const h = request.headers
    this.authorization = h.get('authorization')
    this.key = query.key
    this.accessToken = query.accessToken ?? query.access_token
    this.clientIdHeader = h.get('x-ably-clientid')
  }

  secure(): boolean {
    const r = this.request
    return r.url.startsWith('https:') || r.headers.get('x-forwarded-proto') === 'https'
  }
}

export const credentialsOf = (request: Request, query: Record<string, string | undefined>): Credentials =>
  new RequestCredentials(request, query)
