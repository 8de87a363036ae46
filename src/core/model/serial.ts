/**
 * Channel serials: `<ms>-<seq>` zero-padded so that string order is numeric order, mirroring a
 * Redis stream id. Strictly increasing per channel; the broker assigns them.
 */
let lastMs = -1
let lastMsText = ''
export function formatSerial(ms: number, seq: number): string {
  if (ms !== lastMs) {
    lastMs = ms
    lastMsText = String(ms).padStart(14, '0') + '-'
  }
  return lastMsText + (seq < 10 ? '00000' + seq : String(seq).padStart(6, '0'))
}

export function parseSerial(s: string): { ms: number; seq: number } | undefined {
  const m = /^(\d{1,16})-(\d{1,10})$/.exec(s)
  return m ? { ms: Number(m[1]), seq: Number(m[2]) } : undefined
}

/** Next serial after (lastMs, lastSeq) at time `now`; never goes backwards even if the clock does. */
export function nextSerial(now: number, lastMs: number, lastSeq: number): { ms: number; seq: number } {
  return now > lastMs ? { ms: now, seq: 0 } : { ms: lastMs, seq: lastSeq + 1 }
}

/** The lowest serial above `serial` (sequence numbers are six digits wide: the next millisecond after 999999). */
export function serialAfter(serial: { ms: number; seq: number }): string {
  return serial.seq >= 999_999 ? formatSerial(serial.ms + 1, 0) : formatSerial(serial.ms, serial.seq + 1)
}
