import { Unpackr } from 'msgpackr'
import { msgpackProblem, type MsgpackProblem } from '../../lib/nesting'

/**
 * Plain data only: 64-bit integers as numbers (a BigInt cannot be serialized), no records; the
 * extension types that would build other objects are refused before decoding (`msgpackProblem`).
 * Bytes up to SCRATCH_BYTES are decoded from one reused buffer, copied in first, so msgpackr makes
 * no DataView (nor a property on the caller's bytes) per decode (~0.1 us of ~0.9 for a realtime
 * MESSAGE); binary values are therefore copied out (`copyBuffers`), whatever the size.
 */
const msgpack = new Unpackr({ int64AsType: 'number', useRecords: false, mapsAsObjects: true, copyBuffers: true })
const SCRATCH_BYTES = 64 * 1024
const scratch = new Uint8Array(new ArrayBuffer(SCRATCH_BYTES)) // a plain Uint8Array: binary values copied out stay Uint8Arrays

/** Why bytes are not plain msgpack (what `plainMsgpack` answers instead of a value). */
export class NotPlainMsgpack {
  constructor(readonly problem: MsgpackProblem | 'malformed') {}
}

const NOT_PLAIN = {
  'too deep': new NotPlainMsgpack('too deep'),
  extension: new NotPlainMsgpack('extension'),
  'not finite': new NotPlainMsgpack('not finite'),
  malformed: new NotPlainMsgpack('malformed'),
} satisfies Record<MsgpackProblem | 'malformed', NotPlainMsgpack>

/**
 * msgpack bytes as plain data (request bodies, realtime frames), or why not (a NotPlainMsgpack,
 * which no decoded value can be): nested deeper than `maxDepth`, an extension type, (with
 * `finite`) a NaN or infinite float, or not msgpack at all. The value is answered bare: no
 * wrapper object per frame.
 */
export function plainMsgpack(bytes: Uint8Array, maxDepth: number, finite = false): unknown {
  const problem = msgpackProblem(bytes, maxDepth, finite)
  if (problem) return NOT_PLAIN[problem]
  try {
    if (bytes.byteLength > SCRATCH_BYTES) return msgpack.unpack(bytes)
    scratch.set(bytes)
    return msgpack.unpack(scratch, bytes.byteLength)
  } catch {
    return NOT_PLAIN.malformed
  }
}
