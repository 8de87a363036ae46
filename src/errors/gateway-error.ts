import { ERROR_CODES, HELP_URL, type ErrorCode } from './codes'

export interface ErrorBody {
  message: string
  code: number
  statusCode: number
  href: string
}

/**
 * Longest error message kept (characters): messages may quote what a client sent (an id, a
 * clientId, a path), and they travel in a response header as well as the body.
 */
export const MAX_ERROR_MESSAGE = 512

const bounded = (m: string) => (m.length > MAX_ERROR_MESSAGE ? m.slice(0, MAX_ERROR_MESSAGE - 3) + '...' : m)

/** The one error class. Anything thrown that is not a GatewayError is reported as 50000. */
export class GatewayError extends Error {
  readonly code: ErrorCode
  readonly statusCode: number
  /** Extra response headers, e.g. Retry-After on 429. */
  readonly headers?: Record<string, string>

  constructor(code: ErrorCode, message?: string, opts?: { status?: number; headers?: Record<string, string> }) {
    super(bounded(message ?? ERROR_CODES[code].message))
    this.name = 'GatewayError'
    this.code = code
    this.statusCode = opts?.status ?? ERROR_CODES[code].status
    this.headers = opts?.headers
  }

  toBody(): ErrorBody {
    return { message: this.message, code: this.code, statusCode: this.statusCode, href: HELP_URL + this.code }
  }
}

/** Shorthands for the common cases, so call sites read as the decision they make. */
export const notFound = (message = 'Not found') => new GatewayError(40400, message)
export const denied = (message?: string) => new GatewayError(40160, message)
