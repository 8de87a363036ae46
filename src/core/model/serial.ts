/**
 * Channel serials: `<ms>-<seq>` zero-padded so that string order is numeric order, mirroring a
 * Redis stream id. Strictly increasing per channel; the broker assigns them.
 */
let lastMs = -1
let lastMsText = ''
/** The first sequence numbers as six digits, made once: a serial is then one string, not three. */
const PADDED = Array.from({ length: 1000 }, (_, i) => String(i).padStart(6, '0'))
export function formatSerial(ms: number, seq: number): string {
  if (ms !== lastMs) {
    lastMs = ms
    lastMsText = String(ms).padStart(14, '0') + '-'
  }
  return lastMsText + (seq < PADDED.length ? PADDED[seq]! : String(seq).padStart(6, '0'))
}

export function parseSerial(s: string): { ms: number; seq: number } | undefined {
  const m = /^(\d{1,16})-(\d{1,10})$/.exec(s)
  return m ? { ms: Number(m[1]), seq: Number(m[2]) } : undefined
}

/** A channel's last serial, as numbers. */
export interface SerialClock {
  lastMs: number
  lastSeq: number
}

/**
 * Advances `c` to the next serial at time `now`: never backwards even if the clock goes back. In
 * place (a publish makes no object for it).
 */
export function advanceSerial(c: SerialClock, now: number): void {
  if (now > c.lastMs) {
    c.lastMs = now
    c.lastSeq = 0
  } else c.lastSeq++
}

/** The lowest serial above `serial` (sequence numbers are six digits wide: the next millisecond after 999999). */
export function serialAfter(serial: { ms: number; seq: number }): string {
  return serial.seq >= 999_999 ? formatSerial(serial.ms + 1, 0) : formatSerial(serial.ms, serial.seq + 1)
}
