import { GatewayError, type ErrorBody } from '../../errors'
import type { BatchResult } from '../types'

export const asGatewayError = (e: unknown): GatewayError => (e instanceof GatewayError ? e : new GatewayError(50000))

export function summarize<T>(results: Array<T | { channel: string; error: ErrorBody }>): BatchResult<T> {
  const failureCount = results.filter((r) => typeof r === 'object' && r !== null && 'error' in r).length
  return { successCount: results.length - failureCount, failureCount, results }
}
