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
