import type { PublishResponse } from '../../core/channels/publisher'
import type { BatchResult } from '../../core/types'

/**
 * Batch publish results in the form the request's protocol version reads: before version 3 one
 * flat array over every spec of `{channel, messageId}` or `{channel, error}`; from version 3 on
 * (and when no version is stated) one BatchResult per spec, as the client libraries of today read it.
 */
export function batchPublishToWire(results: BatchResult<PublishResponse>[], version: number | undefined): unknown {
  if (version === undefined || version >= 3) return results
  return results.flatMap((r) =>
    r.results.map((x) => ('error' in x ? x : { channel: x.channel, messageId: x.messageId })),
  )
}
