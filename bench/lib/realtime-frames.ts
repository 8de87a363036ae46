/**
 * Reading realtime frames (msgpack protocol messages) without decoding them, for the benchmark
 * subscribers (see msgpack-scan.ts for why): the action of a frame, and the `data` of every
 * message of a MESSAGE frame as a byte range.
 */
import { keyBytes, MsgpackScan } from './msgpack-scan'

const ACTION = keyBytes('action')
const MESSAGES = keyBytes('messages')
const DATA = keyBytes('data')
const scan = new MsgpackScan()

/** The `action` of a protocol message frame (-1 when it has none). */
export function frameAction(frame: Uint8Array): number {
  scan.reset(frame)
  for (let n = scan.map(); n > 0; n--) {
    if (scan.keyIs(ACTION)) return scan.int()
    scan.skip()
  }
  return -1
}

/**
 * Calls `visit(frame, start, end)` with the bytes of each message's `data` string, in order
 * (start -1 for a message whose data is absent or not a string); returns the number of messages.
 * Throws on a frame that is not a well-formed protocol message.
 */
export function scanMessages(
  frame: Uint8Array,
  visit: (frame: Uint8Array, start: number, end: number) => void,
): number {
  scan.reset(frame)
  let count = 0
  for (let n = scan.map(); n > 0; n--) {
    if (!scan.keyIs(MESSAGES)) {
      scan.skip()
      continue
    }
    for (let m = scan.array(); m > 0; m--) {
      count++
      let start = -1
      let end = -1
      for (let k = scan.map(); k > 0; k--) {
        if (!scan.keyIs(DATA)) {
          scan.skip()
          continue
        }
        const len = scan.str()
        if (len < 0) scan.skip()
        else {
          start = scan.pos
          end = start + len
          scan.pos = end
        }
      }
      visit(frame, start, end)
    }
  }
  if (scan.pos !== frame.byteLength) throw new Error(`${frame.byteLength - scan.pos} bytes after the protocol message`)
  return count
}
