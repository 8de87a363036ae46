/**
 * A redis-server under valgrind's callgrind, whose instruction counts can be zeroed and read
 * around a measured stretch: exact counts, so two variants compare on a loaded machine where CPU
 * times vary by 10-30%. Needs `valgrind`, `callgrind_control` and `redis-server` on the PATH.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startRedis } from './redis-server'

export interface CallgrindRedis {
  url: string
  /** The instructions redis-server executes while `work` runs. */
  count(work: () => Promise<void>): Promise<number>
  stop(): Promise<void>
}

export async function startCallgrindRedis(): Promise<CallgrindRedis> {
  for (const bin of ['valgrind', 'callgrind_control'])
    if (!Bun.which(bin)) throw new Error(`${bin} not found on the PATH`)
  const out = mkdtempSync(join(tmpdir(), 'callgrind-redis-'))
  // under valgrind redis-server starts some 50 times slower
  const redis = await startRedis(out, 'redis', {
    wrapper: ['valgrind', '--tool=callgrind', `--callgrind-out-file=${out}/callgrind.out`],
    startMs: 60_000,
  })
  /** callgrind_control on the server: `-z` zeroes the counts, `-d` writes them to a new file. */
  const control = async (option: '-z' | '-d') => {
    await Bun.spawn(['callgrind_control', option, String(redis.pid)], { stdout: 'ignore', stderr: 'ignore' }).exited
  }
  /** The instruction count of the newest dump. */
  const lastDump = (): number => {
    const dumps = readdirSync(out)
      .filter((f) => /^callgrind\.out\.\d+$/.test(f))
      .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()))
    const text = readFileSync(join(out, dumps[dumps.length - 1]!), 'latin1')
    return Number(/^summary: (\d+)/m.exec(text)?.[1])
  }
  return {
    url: redis.url,
    async count(work) {
      await control('-z')
      await work()
      await control('-d')
      return lastDump()
    },
    stop: redis.stop,
  }
}
