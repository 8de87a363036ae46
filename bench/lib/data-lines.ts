/** Counting the `data:` lines of event streams read in chunks (bench/delivery-counter.ts). */
const DATA = Buffer.from('\ndata:')

/**
 * The `data:` lines that end in `chunk` (each preceded by a newline), `tail` being the end of
 * the stream before it (a line split between two chunks counts once, in the chunk where it
 * completes); returns the count and the tail to pass with the next chunk. Start a stream with a
 * tail of `\n`, so that a data line that opens it counts too.
 */
export function countDataLines(chunk: Uint8Array, tail: Buffer): [number, Buffer] {
  const buf: Buffer = tail.length
    ? Buffer.concat([tail, chunk])
    : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length)
  let n = 0
  for (let i = buf.indexOf(DATA); i >= 0; i = buf.indexOf(DATA, i + DATA.length)) n++
  return [n, Buffer.from(buf.subarray(Math.max(0, buf.length - (DATA.length - 1))))]
}
