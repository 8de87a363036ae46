import type { Logger } from '../lib/logger'
import { GatewayError } from './gateway-error'

/**
 * Anything thrown, as the error a client is answered with: a GatewayError as it is; anything else
 * is a fault of the gateway's, answered 50000 and (given a log) logged with its stack and `fields`.
 * The one such mapping for the core, the realtime transports and the errors plugin.
 */
export function asGatewayError(e: unknown, log?: Logger, fields?: Record<string, unknown>): GatewayError {
  if (e instanceof GatewayError) return e
  log?.error('unhandled error', { ...fields, error: e instanceof Error ? (e.stack ?? e.message) : String(e) })
  return new GatewayError(50000, 'Internal error')
}
