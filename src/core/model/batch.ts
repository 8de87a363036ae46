import { asGatewayError, type ErrorBody } from '../../errors'
import type { BatchResult } from '../types'

/**
 * The error of one entry of a batch answer (one channel of a batch publish or batch presence). A
 * capability refusal there is 401 with 40160, as the hosted service and the official client have
 * it inside batch entries; a whole request refused keeps the spec's 403.
 */
export function batchEntryError(e: unknown): ErrorBody {
  const body = asGatewayError(e).toBody()
  return body.code === 40160 ? { ...body, statusCode: 401 } : body
}

export function summarize<T>(results: Array<T | { channel: string; error: ErrorBody }>): BatchResult<T> {
  const failureCount = results.filter((r) => typeof r === 'object' && r !== null && 'error' in r).length
  return { successCount: results.length - failureCount, failureCount, results }
}
