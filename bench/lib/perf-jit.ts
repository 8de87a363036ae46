/**
 * Where a Bun process's CPU goes, native and kernel time included, by the JavaScript that asked
 * for it: Linux `perf` samples with call chains, their JIT frames named from JavaScriptCore's
 * JITDump (`BUN_JSC_useJITDump=1`). Bun's own profiler (`--cpu-prof`) sees JavaScript only: a
 * system call, a native Response or a socket write shows there as one `[native]` line, or not at
 * all when no JavaScript is on the stack (the HTTP server's parsing, the event loop). Used by
 * bench/perf-jit.ts.
 */

/** A JIT code load of a JITDump file: where it lies, when it was made, its name (`JSC-FTL: publish#Ds4Tgf`). */
export interface CodeLoad {
  start: number
  size: number
  /** When it was loaded: seconds of CLOCK_MONOTONIC, the clock of `perf record -k mono`. */
  at: number
  name: string
}

const JIT_CODE_LOAD = 0
const utf8 = new TextDecoder()
/** Record header (id, total size, timestamp), then a code load's pid, tid, vma, code address, size, index. */
const LOAD_NAME_AT = 16 + 40

/**
 * The code loads of a JITDump file (the jitdump format of Linux perf: a header whose third word
 * is its size, then records whose second word is theirs), in the order they were written.
 */
export function codeLoads(dump: Uint8Array): CodeLoad[] {
  const view = new DataView(dump.buffer, dump.byteOffset, dump.byteLength)
  const loads: CodeLoad[] = []
  let at = view.getUint32(8, true)
  while (at + 16 <= dump.byteLength) {
    const id = view.getUint32(at, true)
    const size = view.getUint32(at + 4, true)
    if (size === 0) break
    if (id === JIT_CODE_LOAD && at + LOAD_NAME_AT <= dump.byteLength) {
      let end = at + LOAD_NAME_AT
      while (end < dump.byteLength && dump[end] !== 0) end++
      loads.push({
        start: Number(view.getBigUint64(at + 32, true)),
        size: Number(view.getBigUint64(at + 40, true)),
        at: Number(view.getBigUint64(at + 8, true)) / 1e9,
        name: utf8.decode(dump.subarray(at + LOAD_NAME_AT, end)),
      })
    }
    at += size
  }
  return loads
}

const PAGE = 4096

/**
 * The name of the JIT code at an address at a moment: the latest load covering it made before
 * then. JavaScriptCore puts new code in the memory of code it threw away, so an address names
 * several functions over a run, and a load made after a sample (or after the recording) must not
 * name it.
 */
export class JitNames {
  private readonly pages = new Map<number, CodeLoad[]>()

  constructor(loads: CodeLoad[]) {
    for (const l of loads)
      for (let p = Math.floor(l.start / PAGE); p <= Math.floor((l.start + l.size - 1) / PAGE); p++) {
        const list = this.pages.get(p)
        if (list) list.push(l)
        else this.pages.set(p, [l])
      }
  }

  nameAt(address: number, at: number): string | undefined {
    let found: CodeLoad | undefined
    for (const l of this.pages.get(Math.floor(address / PAGE)) ?? [])
      if (address >= l.start && address < l.start + l.size && l.at <= at && (!found || l.at > found.at)) found = l
    return found?.name
  }
}

/**
 * One sample of `perf script -F comm,tid,time,ip,sym,dso`: its thread's id, its time (seconds),
 * and its frames, leaf first (`sym (dso)`; JIT code as `JSC-<tier>: <name> (jit)`).
 */
export interface Sample {
  tid: number
  at: number
  frames: string[]
}

/** The samples of a perf script, their JIT frames named by `names` where it knows the address then. */
export function parseSamples(text: string, names?: JitNames): Sample[] {
  const samples: Sample[] = []
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split('\n').filter((l) => l.trim())
    if (!lines.length) continue
    // the thread's name (which may hold spaces), its id, the time
    const head = /^.*\S\s+(\d+)\s+(\d+\.\d+):\s*$/.exec(lines[0]!.trim())
    if (!head) continue
    const at = Number(head[2])
    samples.push({
      tid: Number(head[1]),
      at,
      frames: lines.slice(1).map((l) => {
        const frame = /^([0-9a-f]+)\s+(.*)$/.exec(l.trim())
        if (!frame) return l.trim()
        const jit = names?.nameAt(parseInt(frame[1]!, 16), at)
        return jit ? `${jit} (jit)` : frame[2]!
      }),
    })
  }
  return samples
}

const isJs = (frame: string) => frame.includes('JSC-') && !frame.includes('Thunk')
/** `JSC-FTL: publish#Ds4Tgf (jit)` -> `publish#Ds4Tgf` */
const jsName = (frame: string) => frame.replace(/\s*\([^)]*\)$/, '').replace(/^JSC-\w+: /, '')

/** A sample's leaf: the kernel (by system call where the chain shows it), libc, JIT code or Bun's native code. */
function leafKind(s: Sample): string {
  const leaf = s.frames[0] ?? ''
  if (leaf.includes('[kernel')) {
    const call = s.frames.find((f) => f.includes('__x64_sys_'))
    return `kernel ${call ? call.replace(/^__x64_sys_/, '').replace(/\s.*$/, '') : '(other)'}`
  }
  if (leaf.includes('JSC-')) return 'JIT code'
  if (leaf.includes('libc')) return 'libc'
  return 'native'
}

export interface Breakdown {
  /** Samples of the thread asked for. */
  samples: number
  /** Share by the leaf's kind, split by whether any JavaScript frame is on the stack. */
  byKind: Array<[string, number]>
  /** Share by the nearest JavaScript frame (`(no JavaScript)` when none), all leaf kinds together. */
  byNearestJs: Array<[string, number]>
  /** Share of samples with each JavaScript function anywhere on the stack. */
  inclusive: Array<[string, number]>
}

const shares = (m: Map<string, number>, total: number): Array<[string, number]> =>
  [...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => [k, n / total])

const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1)

/**
 * The samples of thread `tid` (a process's main thread has the process's id), attributed. A
 * frame walk stops at code built without frame pointers (libc's `send`), so a system call made by
 * JavaScript through libc shows with no JavaScript above it.
 */
export function breakdown(samples: Sample[], tid: number): Breakdown {
  const byKind = new Map<string, number>()
  const byNearest = new Map<string, number>()
  const inclusive = new Map<string, number>()
  let total = 0
  for (const s of samples) {
    if (s.tid !== tid) continue
    total++
    const nearest = s.frames.find(isJs)
    count(byKind, `${nearest ? 'under JavaScript' : 'no JavaScript'}: ${leafKind(s)}`)
    count(byNearest, nearest ? jsName(nearest) : '(no JavaScript)')
    for (const name of new Set(s.frames.filter(isJs).map(jsName))) count(inclusive, name)
  }
  return {
    samples: total,
    byKind: shares(byKind, total),
    byNearestJs: shares(byNearest, total),
    inclusive: shares(inclusive, total),
  }
}
