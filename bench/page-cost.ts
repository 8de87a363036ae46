/**
 * What this machine charges for memory a process touches for the first time, against memory it
 * touches again: `bun bench/page-cost.ts [--mib 64] [--rounds 3]`. Each round allocates `--mib`
 * MiB as 64 KiB blocks (a ring's blocks, backend/shared/ring-blocks.ts), writes one byte per 4 KiB
 * page (each write a page fault), then frees them, collects, and writes the same amount into
 * blocks allocated again (pages the allocator kept: no fault, with MEMORY_PURGE_DELAY_MS's -1),
 * which it holds to the end (so the next round's first pass has fresh memory again).
 * Prints per round the time and the minor faults of each pass, and µs per fault of the first.
 * Both passes run in one process, with the gateway's allocator settings (begun again for them).
 * A node whose rings are filling (the first RESUME_WINDOW_MS of a busy node, or of a newly busy
 * channel) touches fresh pages for what it retains: its minor faults per second (`purge-delay.ts`)
 * times this price is what the fill costs it. Linux only (/proc). Asserts nothing.
 */
import { parseFlags } from './lib/args'
import { minorFaults } from './lib/cpu'
import { beginWithGatewayAllocator } from './lib/gateway-allocator'

beginWithGatewayAllocator()

const f = parseFlags(process.argv.slice(2), { mib: 'number', rounds: 'number' })
const BLOCK = 64 * 1024
const PAGE = 4096
const blocks = ((f.mib ?? 64) * 1024 * 1024) / BLOCK

/** Allocates the blocks and writes a byte in each page: ms taken, faults taken. */
function touch(): { ms: number; faults: number; held: Buffer[] } {
  const f0 = minorFaults(process.pid)
  const t0 = Bun.nanoseconds()
  const held: Buffer[] = []
  for (let i = 0; i < blocks; i++) {
    const b = Buffer.allocUnsafeSlow(BLOCK)
    for (let o = 0; o < BLOCK; o += PAGE) b[o] = 1
    held.push(b)
  }
  return { ms: (Bun.nanoseconds() - t0) / 1e6, faults: minorFaults(process.pid) - f0, held }
}

const kept: Buffer[][] = []
for (let round = 1; round <= (f.rounds ?? 3); round++) {
  let first: ReturnType<typeof touch> | undefined = touch()
  const { ms, faults } = first
  first = undefined
  Bun.gc(true)
  const again = touch()
  kept.push(again.held)
  // a price only where most pages faulted (a pass served from kept memory says nothing of it)
  const price = faults * PAGE * 2 > blocks * BLOCK ? `${((ms * 1000) / faults).toFixed(2)} µs each` : 'not fresh'
  console.log(
    `round ${round}: fresh ${ms.toFixed(1)} ms, ${faults} faults (${price}); ` +
      `again ${again.ms.toFixed(1)} ms, ${again.faults} faults`,
  )
}
console.log(`held at the end: ${kept.length * blocks} blocks`)
