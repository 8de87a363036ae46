import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

/** The shipped artifact: `npm run build`'s single executable, run as a process outside the repo. */
const ROOT = join(import.meta.dir, '..', '..')
export const BINARY = join(ROOT, 'dist', 'gateway')

const newest = (p: string): number =>
  statSync(p).isDirectory() ? Math.max(0, ...readdirSync(p).map((f) => newest(join(p, f)))) : statSync(p).mtimeMs

/** Builds dist/gateway unless it is newer than every file of src/ and package.json (the build flags). */
export function ensureBinary() {
  if (
    existsSync(BINARY) &&
    statSync(BINARY).mtimeMs > Math.max(newest(join(ROOT, 'src')), newest(join(ROOT, 'package.json')))
  )
    return
  const r = Bun.spawnSync([process.execPath, 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`build failed:\n${r.stdout}\n${r.stderr}`)
}
