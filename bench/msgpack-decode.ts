/**
 * The decoding of msgpack bodies and realtime frames (`plainMsgpack`, lib/plain-msgpack.ts) in a
 * loop, this checkout's against another one's in the same process, alternated round by round:
 * `BENCH_GATEWAY_DIR=<checkout before> bun bench/msgpack-decode.ts [--frames 500000] [--rounds 4]
 * [--data 100] [--messages 1]` (without BENCH_GATEWAY_DIR both sides are this checkout). The
 * frames are realtime MESSAGEs as `bench/run.ts realtime-publish` sends them (`--messages`
 * messages of `--data` ASCII characters each, 100 channels); reports ns per frame.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Packr } from 'msgpackr'
import { parseFlags } from './lib/args'
import { benchSides } from './lib/in-process-node'
import { alternatedRuns } from './lib/alternation'

const f = parseFlags(process.argv.slice(2), {
  frames: 'number',
  rounds: 'number',
  data: 'number',
  messages: 'number',
})
const count = f.frames ?? 500_000
const packr = new Packr({ useRecords: false, moreTypes: false })
const frames = Array.from(
  { length: 100 },
  (_, i) =>
    new Uint8Array(
      packr.pack({
        action: 15,
        channel: `bench-${i}`,
        msgSerial: i,
        messages: Array.from({ length: f.messages ?? 1 }, () => ({ name: 'bench', data: 'x'.repeat(f.data ?? 100) })),
      }),
    ),
)
const decoders: Record<string, (bytes: Uint8Array, depth: number) => unknown> = {}
for (const [name, root] of Object.entries(benchSides()))
  // where the reader is, or where it was before it moved to lib/
  decoders[name] = (
    await import(
      join(
        root,
        existsSync(join(root, 'src/lib/plain-msgpack.ts')) ? 'src/lib/plain-msgpack.ts' : 'src/api/wire/msgpack.ts',
      )
    )
  ).plainMsgpack

let sink = 0
await alternatedRuns(f.rounds ?? 4, count, `frame of ${frames[0]!.byteLength} bytes`, (side) => {
  const decode = decoders[side]!
  const t = performance.now()
  for (let i = 0; i < count; i++) sink += (decode(frames[i % 100]!, 64) as { msgSerial: number }).msgSerial
  return performance.now() - t
})
if (sink < 0) console.log(sink)
