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
    private readonly headers: Headers,
    query: Record<string, string | undefined>,
  ) {
    this.authorization = headers.get('authorization')
    this.key = query.key
    this.accessToken = query.accessToken ?? query.access_token
    this.clientIdHeader = headers.get('x-ably-clientid')
  }

  secure(): boolean {
    return this.request.url.startsWith('https:') || this.headers.get('x-forwarded-proto') === 'https'
  }
}

export const credentialsOf = (request: Request, query: Record<string, string | undefined>): Credentials =>
  new RequestCredentials(request, request.headers, query)
