/**
 * The streams of the delta-fanout scenario, the same in the publisher and the checking
 * subscriber: `json-state`, a JSON state object of about 2 KiB in which a few fields change per
 * message (published as an object: `encoding: json`), and `growing-text`, a text that grows by a
 * sentence per message (a string). Deterministic (a seeded generator), so the subscriber can
 * check every decoded payload.
 */
export type DeltaStream = 'json-state' | 'growing-text'

/** A small deterministic generator (xorshift): a run or a failure is reproduced from its seed. */
export function rng(seed: number) {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x / 0x100000000
  }
}

/** The `data` of the stream's messages (objects for json-state, strings for growing-text). */
export function deltaStream(kind: DeltaStream, n: number): unknown[] {
  const r = rng(kind === 'json-state' ? 42 : 7)
  const out: unknown[] = []
  if (kind === 'json-state') {
    const state: Record<string, Record<string, unknown>> = {}
    for (let k = 0; k < 24; k++)
      state[`device_${k}`] = {
        id: `dev-${(r() * 1e9).toFixed(0)}`,
        temperature: +(r() * 40).toFixed(2),
        humidity: +(r() * 100).toFixed(1),
        status: r() < 0.5 ? 'online' : 'idle',
        updatedAt: 1_700_000_000_000 + Math.floor(r() * 1e6),
      }
    for (let i = 0; i < n; i++) {
      for (let c = 0; c < 3; c++) {
        const d = state[`device_${Math.floor(r() * 24)}`]!
        d.temperature = +(r() * 40).toFixed(2)
        d.updatedAt = 1_700_000_000_000 + i * 1000 + Math.floor(r() * 1000)
      }
      out.push(structuredClone(state))
    }
    return out
  }
  const words = ['delta', 'stream', 'edge', 'gateway', 'message', 'bytes', 'client', 'server', 'window', 'copy']
  let text = 'It began with a single line of text.'
  for (let i = 0; i < n; i++) {
    const len = 4 + Math.floor(r() * 8)
    text += ' ' + Array.from({ length: len }, () => words[Math.floor(r() * words.length)]).join(' ') + ` (${i}).`
    out.push(text)
  }
  return out
}

/** What a payload is on the wire once decoded: the JSON text of an object, or the string. */
export const payloadText = (data: unknown): string => (typeof data === 'string' ? data : JSON.stringify(data))
