import { asGatewayError, GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import { requestId } from './request-id'

/**
 * A request part that does not match its schema: names the first problem's path and message,
 * never the value (which may be large or deeply nested).
 */
export function validationError(where: string, e?: { path?: string; message?: string }): GatewayError {
  const detail = e ? `${e.path || '/'}: ${e.message}` : 'invalid value'
  return new GatewayError(where === 'body' ? 40001 : 40003, `Invalid request ${where}: ${detail}`)
}

/** Maps anything thrown (Elysia's error codes included) to the spec's error shape (`plugins/errors.ts` writes it). */
export function toGatewayError(code: string | number, error: unknown, log?: Logger, request?: Request): GatewayError {
  if (error instanceof GatewayError) return error
  switch (code) {
    case 'VALIDATION': {
      const e = error as { type?: string; valueError?: { path?: string; message?: string } }
      return validationError(e.type ?? 'request', e.valueError)
    }
    case 'PARSE':
      if ((error as { cause?: unknown }).cause instanceof GatewayError) return (error as { cause: GatewayError }).cause
      return new GatewayError(40001, 'Invalid request body: could not be parsed')
    case 'NOT_FOUND':
      return new GatewayError(40400, 'Not found: no such route')
    case 'INVALID_COOKIE_SIGNATURE':
    case 'INVALID_FILE_TYPE':
      return new GatewayError(40000, 'Bad request')
    default:
      return asGatewayError(error, log, { requestId: request && requestId(request), code: String(code) })
  }
}
