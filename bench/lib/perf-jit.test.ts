import { describe, expect, test } from 'bun:test'
import { breakdown, codeLoads, parseSamples, perfMap } from './perf-jit'

/** A JITDump file of code loads (the jitdump layout of Linux perf), as JavaScriptCore writes them. */
function dump(loads: Array<{ start: number; size: number; name: string }>, header = 40): Uint8Array {
  const records = loads.map(({ start, size, name }) => {
    const text = new TextEncoder().encode(`${name}\0`)
    const r = new Uint8Array(56 + text.length + size) // the code's bytes follow its name
    const v = new DataView(r.buffer)
    v.setUint32(0, 0, true) // JIT_CODE_LOAD
    v.setUint32(4, r.length, true)
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
  test('every load, named and placed; the latest wins where code was put in the place of thrown-away code', () => {
    const loads = codeLoads(
      dump([
        { start: 0x1000, size: 0x40, name: 'JSC-DFG: old#A' },
        { start: 0x2000, size: 0x10, name: 'JSC-FTL: kept#B' },
        { start: 0x1020, size: 0x40, name: 'JSC-FTL: new#C' },
      ]),
    )
    expect(loads.map((l) => l.name)).toEqual(['JSC-FTL: kept#B', 'JSC-FTL: new#C'])
    expect(perfMap(loads)).toBe('2000 10 JSC-FTL: kept#B\n1020 40 JSC-FTL: new#C\n')
  })

  test('a header of another size and a truncated last record', () => {
    const whole = dump([{ start: 0x10, size: 8, name: 'JSC-FTL: f#A' }], 64)
    const cut = new Uint8Array(whole.length + 20)
    cut.set(whole)
    new DataView(cut.buffer).setUint32(whole.length, 0, true)
    new DataView(cut.buffer).setUint32(whole.length + 4, 500, true) // says more than there is
    expect(codeLoads(cut).map((l) => l.name)).toEqual(['JSC-FTL: f#A'])
  })
})

const SCRIPT = `bun.exe 7
\tffffffff81 tcp_sendmsg ([kernel.kallsyms])
\tffffffff82 __x64_sys_sendto ([kernel.kallsyms])
\t10aba4 __send (/usr/lib/x86_64-linux-gnu/libc.so.6)

bun.exe 7
\t183cff1 [unknown] (/opt/bun)
\t7f01 JSC-FTL: serve#AB (/tmp/perf-7.map)
\t7f02 JSC-FTL: outer#CD (/tmp/perf-7.map)

bun.exe 7
\t7f01 JSC-FTL: serve#AB (/tmp/perf-7.map)
\t7f03 JSC-LLIntThunk: arityFixup (/tmp/perf-7.map)
\t7f02 JSC-FTL: outer#CD (/tmp/perf-7.map)

HeapHelper 9
\t183cff1 [unknown] (/opt/bun)
`

describe('a perf script by the JavaScript that asked', () => {
  const b = breakdown(parseSamples(SCRIPT), 7)

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
