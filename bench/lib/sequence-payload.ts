/**
 * The message data of the fanout and latency scenarios: `<publisher>.<seq>[.<stamp>]:<padding>`.
 * `publisher` is the publishing connection, `seq` counts its publishes from 0 (each is sent after
 * the previous one was acknowledged, so every subscriber must see them in this order) and `stamp`
 * is the send time in µs of the wall clock (`wallMicros`), comparable between processes.
 */
export const wallMicros = (): number => Math.round((performance.timeOrigin + performance.now()) * 1000)

export function sequenceData(publisher: number, seq: number, stamp?: number, padding = ''): string {
  return stamp === undefined ? `${publisher}.${seq}:${padding}` : `${publisher}.${seq}.${stamp}:${padding}`
}

/** Padding that makes `{"name":"bench","data":"<numbers>:<padding>"}` about `bytes` long. */
export function paddingFor(bytes: number, numbers = '19.1000000.1795258547989000'): string {
  const base = JSON.stringify({ name: 'bench', data: `${numbers}:` }).length
  return 'x'.repeat(Math.max(0, bytes - base))
}

/** The numbers at the start of a message's data; `seq` is -1 when the data has none (not ours). */
export interface SequenceNumbers {
  publisher: number
  seq: number
  stamp: number
}

/**
 * Reads `<publisher>.<seq>[.<stamp>]` from the bytes `data[i, end)` into `out`, allocating
 * nothing; returns the index after the numbers, or -1 when they run into `end` (a record split
 * across socket reads: read again with more bytes).
 */
export function readSequence(data: Uint8Array, i: number, end: number, out: SequenceNumbers): number {
  let c = 0
  let publisher = 0
  while (i < end && (c = data[i]!) >= 48 && c <= 57) {
    publisher = publisher * 10 + c - 48
    i++
  }
  if (i >= end) return -1
  let seq = -1
  let stamp = 0
  if (c === 46) {
    seq = 0
    while (++i < end && (c = data[i]!) >= 48 && c <= 57) seq = seq * 10 + c - 48
    if (i >= end) return -1
    if (c === 46) {
      while (++i < end && (c = data[i]!) >= 48 && c <= 57) stamp = stamp * 10 + c - 48
      if (i >= end) return -1
    }
  }
  out.publisher = publisher
  out.seq = seq
  out.stamp = stamp
  return i
}
