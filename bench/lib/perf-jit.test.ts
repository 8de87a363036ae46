import { describe, expect, test } from 'bun:test'
import { breakdown, codeLoads, JitNames, parseSamples } from './perf-jit'

/** A JITDump file of code loads (the jitdump layout of Linux perf), as JavaScriptCore writes them. */
function dump(loads: Array<{ start: number; size: number; at: number; name: string }>, header = 40): Uint8Array {
  const records = loads.map(({ start, size, at, name }) => {
    const text = new TextEncoder().encode(`${name}\0`)
    const r = new Uint8Array(56 + text.length + size) // the code's bytes follow its name
    const v = new DataView(r.buffer)
    v.setUint32(0, 0, true) // JIT_CODE_LOAD
    v.setUint32(4, r.length, true)
    v.setBigUint64(8, BigInt(at * 1e9), true) // ns of CLOCK_MONOTONIC
    v.setBigUint64(24, 1n, true) // vma
    v.setBigUint64(32, BigInt(start), true)
    v.setBigUint64(40, BigInt(size), true)
    r.set(text, 56)
    return r
  })
  const out = new Uint8Array(header + records.reduce((n, r) => n + r.length, 0))
  new DataView(out.buffer).setUint32(0, 0x4a695444, true)
  new DataView(out.buffer).setUint32(8, header, true)
  let at = header
  for (const r of records) {
    out.set(r, at)
    at += r.length
  }
  return out
}

describe('code loads of a JITDump', () => {
  const loads = [
    { start: 0x1000, size: 0x40, at: 10, name: 'JSC-DFG: old#A' },
    { start: 0x2000, size: 0x10, at: 11, name: 'JSC-FTL: other#B' },
    { start: 0x1020, size: 0x40, at: 20, name: 'JSC-FTL: new#C' },
    { start: 0x1ff8, size: 0x10, at: 12, name: 'JSC-FTL: across#D' }, // on two pages
  ]

  test('every load, placed, timed and named, in the order written', () => {
    expect(codeLoads(dump(loads))).toEqual(loads)
  })

  test('an address names the latest code loaded there before the moment asked about', () => {
    const names = new JitNames(codeLoads(dump(loads)))
    expect(names.nameAt(0x1030, 15)).toBe('JSC-DFG: old#A') // before new#C took its place
    expect(names.nameAt(0x1030, 25)).toBe('JSC-FTL: new#C')
    expect(names.nameAt(0x1010, 25)).toBe('JSC-DFG: old#A') // below new#C: old#A's still
    expect(names.nameAt(0x1030, 5)).toBeUndefined() // before any code was there
    expect(names.nameAt(0x200c, 30)).toBe('JSC-FTL: other#B') // past across#D's end
    expect(names.nameAt(0x1ffc, 30)).toBe('JSC-FTL: across#D')
    expect(names.nameAt(0x2006, 11.5)).toBe('JSC-FTL: other#B')
    expect(names.nameAt(0x2006, 30)).toBe('JSC-FTL: across#D')
    expect(names.nameAt(0x3000, 30)).toBeUndefined()
  })

  test('a header of another size and a truncated last record', () => {
    const whole = dump([{ start: 0x10, size: 8, at: 1, name: 'JSC-FTL: f#A' }], 64)
    const cut = new Uint8Array(whole.length + 20)
    cut.set(whole)
    new DataView(cut.buffer).setUint32(whole.length, 0, true)
    new DataView(cut.buffer).setUint32(whole.length + 4, 500, true) // says more than there is
    expect(codeLoads(cut).map((l) => l.name)).toEqual(['JSC-FTL: f#A'])
  })
})

const SCRIPT = `bun.exe 7  100.000001:
\tffffffff81 tcp_sendmsg ([kernel.kallsyms])
\tffffffff82 __x64_sys_sendto ([kernel.kallsyms])
\t10aba4 __send (/usr/lib/x86_64-linux-gnu/libc.so.6)

bun.exe 7  100.000002:
\t183cff1 [unknown] (/opt/bun)
\t1010 [unknown] ([unknown])
\t2004 [unknown] ([unknown])

bun.exe 7  100.000003:
\t1010 [unknown] ([unknown])
\t3000 [unknown] ([unknown])
\t2004 [unknown] ([unknown])

HeapHelper 9  100.000004:
\t183cff1 [unknown] (/opt/bun)
`
const NAMES = new JitNames([
  { start: 0x1000, size: 0x40, at: 50, name: 'JSC-FTL: serve#AB' },
  { start: 0x3000, size: 0x40, at: 50, name: 'JSC-LLIntThunk: arityFixup' },
  { start: 0x2000, size: 0x40, at: 50, name: 'JSC-FTL: outer#CD' },
  { start: 0x2000, size: 0x40, at: 200, name: 'JSC-FTL: later#EF' }, // loaded after the samples
])

describe('a perf script by the JavaScript that asked', () => {
  const b = breakdown(parseSamples(SCRIPT, NAMES), 7)

  test("only the thread asked for: the process's main thread", () => {
    expect(b.samples).toBe(3)
  })

  test('by leaf kind, the system call named, with or without JavaScript above', () => {
    expect(Object.fromEntries(b.byKind)).toEqual({
      'no JavaScript: kernel sendto': 1 / 3,
      'under JavaScript: native': 1 / 3,
      'under JavaScript: JIT code': 1 / 3,
    })
  })

  test('by the nearest JavaScript frame, and by every function on the stack once (thunks are not functions)', () => {
    expect(Object.fromEntries(b.byNearestJs)).toEqual({ '(no JavaScript)': 1 / 3, 'serve#AB': 2 / 3 })
    expect(Object.fromEntries(b.inclusive)).toEqual({ 'serve#AB': 2 / 3, 'outer#CD': 2 / 3 })
  })
})
