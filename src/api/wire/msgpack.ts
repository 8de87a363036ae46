import { Unpackr } from 'msgpackr'
import { msgpackProblem, type MsgpackProblem } from '../../lib/nesting'

/**
 * Plain data only: 64-bit integers as numbers (a BigInt cannot be serialized), no records; the
 * extension types that would build other objects are refused before decoding (`msgpackProblem`).
 */
const msgpack = new Unpackr({ int64AsType: 'number', useRecords: false, mapsAsObjects: true })

/**
 * msgpack bytes as plain data (request bodies, realtime frames), or why not: nested deeper than
 * `maxDepth`, an extension type, (with `finite`) a NaN or infinite float, or not msgpack at all.
 */
export function plainMsgpack(
  bytes: Uint8Array,
  maxDepth: number,
  finite = false,
): { value: unknown } | { problem: MsgpackProblem | 'malformed' } {
  const problem = msgpackProblem(bytes, maxDepth, finite)
  if (problem) return { problem }
  try {
    return { value: msgpack.unpack(bytes) }
  } catch {
    return { problem: 'malformed' }
  }
}
