import { varintSize } from './bytes'
import { BlockIndex, keyAt, WINDOW } from './block-index'
import { Sections } from './instructions'

/**
 * A VCDIFF encoder (RFC 3284), in the form Google's open-vcdiff writes and the hosted service's
 * clients decode (`@ably/vcdiff-decoder`): one window whose source segment is the whole base,
 * the default code table, the default address caches, no secondary compression, no checksum
 * (that decoder reads none).
 *
 * Matching is greedy over a rolling hash index of every 4-byte window of the base, plus of the
 * target bytes already passed that were not copied (repeats within the new bytes, runs). At each
 * position the candidates are: the base right after the previous copy (an edit that kept the
 * length), then at most MAX_PROBES positions of the base's bucket and TARGET_PROBES of the
 * target's. The longest wins and is extended backwards over the literal bytes before it; a
 * copy's bytes are skipped, so the work is linear in the target (each probe compares at most
 * the bytes the winning copy then skips) plus linear in the base for its index.
 */
const MAX_PROBES = 16
const TARGET_PROBES = 4
/** A match this long is taken without probing further. */
const GOOD_ENOUGH = 256

const HEADER = [0xd6, 0xc3, 0xc4, 0x00, 0x00] // "VCD\0", no Hdr_Indicator bits
const VCD_SOURCE = 0x01

// one encoder's state, reused: encoding is synchronous
const sections = new Sections()
const sourceIndex = new BlockIndex()
const targetIndex = new BlockIndex()

/**
 * The delta that turns `source` into `target`. With `maxSize`, undefined as soon as it is clear
 * the delta would be larger than that (the caller sends the target whole); without, the delta is
 * at most the target's length plus about 30 bytes (one ADD of everything, and the headers).
 */
export function vcdiffEncode(source: Uint8Array, target: Uint8Array, maxSize = Infinity): Uint8Array | undefined {
  const s = sections
  s.reset()
  const srcLen = source.length
  const n = target.length
  const budget = maxSize - 8 // what the window's own fields take at least
  const useSource = srcLen >= WINDOW
  if (useSource) {
    sourceIndex.reset(srcLen)
    sourceIndex.indexAll(source)
  }
  targetIndex.reset(n)

  let i = 0
  let literal = 0 // start of the bytes not yet written
  let next = 0 // where in the base the previous copy ended (at first its start), moved on with each literal byte
  let key = n >= WINDOW ? keyAt(target, 0) : 0
  while (i + WINDOW <= n) {
    let best = 0
    let from = 0 // U address of the best match
    const max = n - i
    // 1. the base where the previous copy left off (a same-length edit in between)
    if (next >= 0 && next < srcLen) {
      const len = common(source, next, target, i, Math.min(srcLen - next, max))
      if (len >= WINDOW) {
        best = len
        from = next
      }
    }
    // 2. the base's windows with this hash
    if (useSource && best < GOOD_ENOUGH) {
      for (
        let p = sourceIndex.first(sourceIndex.bucket(key)), k = 0;
        p && k < MAX_PROBES;
        p = sourceIndex.next(p - 1), k++
      ) {
        const at = p - 1
        if (source[at + best] !== target[i + best]) continue
        const len = common(source, at, target, i, Math.min(srcLen - at, max))
        if (len > best) {
          best = len
          from = at
          if (len >= GOOD_ENOUGH) break
        }
      }
    }
    // 3. the target's own earlier bytes (may overlap the bytes being made: a run)
    const tBucket = targetIndex.bucket(key)
    if (best < GOOD_ENOUGH) {
      for (let p = targetIndex.first(tBucket), k = 0; p && k < TARGET_PROBES; p = targetIndex.next(p - 1), k++) {
        const at = p - 1
        if (target[at + best] !== target[i + best]) continue
        const len = common(target, at, target, i, max)
        if (len > best) {
          best = len
          from = srcLen + at
          if (len >= GOOD_ENOUGH) break
        }
      }
    }
    if (best >= WINDOW) {
      // extend backwards over the literal bytes before it
      let start = i
      let addr = from
      const floor = from >= srcLen ? srcLen : 0
      while (start > literal && addr > floor && uAt(source, target, srcLen, addr - 1) === target[start - 1]) {
        start--
        addr--
      }
      const len = best + (i - start)
      if (len > s.addressCost(addr, srcLen + start) + 1) {
        s.add(target, literal, start)
        s.copy(len, addr, srcLen + start)
        if (s.size > budget) return undefined
        i = start + len
        literal = i
        next = addr < srcLen ? addr + len : -1
        if (i + WINDOW <= n) key = keyAt(target, i)
        continue
      }
    }
    // a literal byte: the target's window here becomes a candidate for later positions
    targetIndex.insert(tBucket, i)
    if (next >= 0) next++
    i++
    if (i + WINDOW <= n) key = (key >>> 8) | (target[i + 3]! << 24)
    if (s.size + (i - literal) > budget) return undefined
  }
  s.add(target, literal, n)
  if (s.size > budget) return undefined
  return assemble(srcLen, n, srcLen > 0, maxSize)
}

/** Bytes of `a` from `ap` equal to those of `b` from `bp`, at most `max`. */
function common(a: Uint8Array, ap: number, b: Uint8Array, bp: number, max: number): number {
  let k = 0
  while (k < max && a[ap + k] === b[bp + k]) k++
  return k
}

/** The byte at `addr` of U (the base, then the target). */
const uAt = (source: Uint8Array, target: Uint8Array, srcLen: number, addr: number): number =>
  addr < srcLen ? source[addr]! : target[addr - srcLen]!

function assemble(srcLen: number, targetLen: number, withSource: boolean, maxSize: number): Uint8Array | undefined {
  const { data, inst, addr } = sections
  const encoding =
    varintSize(targetLen) +
    1 +
    varintSize(data.length) +
    varintSize(inst.length) +
    varintSize(addr.length) +
    data.length +
    inst.length +
    addr.length
  const size =
    HEADER.length + 1 + (withSource ? varintSize(srcLen) + varintSize(0) : 0) + varintSize(encoding) + encoding
  if (size > maxSize) return undefined
  const out = new Uint8Array(size)
  let at = 0
  const varint = (v: number) => {
    const k = varintSize(v)
    for (let j = k - 1; j >= 0; j--) {
      out[at + j] = (v & 127) | (j === k - 1 ? 0 : 128)
      v >>>= 7
    }
    at += k
  }
  out.set(HEADER, 0)
  at = HEADER.length
  out[at++] = withSource ? VCD_SOURCE : 0
  if (withSource) {
    varint(srcLen)
    varint(0)
  }
  varint(encoding)
  varint(targetLen)
  out[at++] = 0 // Delta_Indicator: no secondary compression
  varint(data.length)
  varint(inst.length)
  varint(addr.length)
  out.set(data.buf.subarray(0, data.length), at)
  at += data.length
  out.set(inst.buf.subarray(0, inst.length), at)
  at += inst.length
  out.set(addr.buf.subarray(0, addr.length), at)
  return out
}
