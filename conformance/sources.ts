/**
 * The suites' sources: extracted from local git repositories (a clone, `git clone
 * --recurse-submodules`, or a bare mirror) at a ref, with their `ably-common` submodule, and their
 * test dependencies installed from the npm registry. Nothing here needs GitHub at run time: the
 * repositories' own dev dependencies include GitHub-hosted forks, so ably-js's tests run with the
 * npm packages they need and the client build of the same version from npm (its `build/` folder,
 * which is what `npm run build:node` makes from that tag).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, cpSync } from 'node:fs'
import { join, resolve } from 'node:path'

export interface Source {
  /** The repository's git dir (of a clone or a bare mirror). */
  gitDir: string
  ref: string
  /** The commit the ref named. */
  commit: string
}

function run(cmd: string[], cwd?: string): string {
  const r = Bun.spawnSync(cmd, { cwd, stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`${cmd.join(' ')}: ${r.stderr.toString().trim() || `exit ${r.exitCode}`}`)
  return r.stdout.toString().trim()
}

export function gitDirOf(path: string): string {
  return resolve(path, run(['git', '-C', path, 'rev-parse', '--git-dir']))
}

/** The newest tag that names a release (`1.2.3` or `v1.2.3`), by version order. */
export function newestRelease(gitDir: string): string {
  const tags = run(['git', '--git-dir', gitDir, 'tag', '--list'])
    .split('\n')
    .filter((t) => /^v?\d+\.\d+\.\d+$/.test(t))
  const key = (t: string) => t.replace(/^v/, '').split('.').map(Number)
  tags.sort((a, b) => {
    const [x, y] = [key(a), key(b)]
    for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!
    return 0
  })
  const last = tags.at(-1)
  if (!last) throw new Error(`${gitDir}: no release tag`)
  return last
}

export function source(path: string, ref: string | undefined): Source {
  const gitDir = gitDirOf(path)
  const r = ref ?? newestRelease(gitDir)
  return { gitDir, ref: r, commit: run(['git', '--git-dir', gitDir, 'rev-parse', `${r}^{commit}`]) }
}

function extract(gitDir: string, commit: string, dest: string): void {
  mkdirSync(dest, { recursive: true })
  const archive = Bun.spawnSync(['git', '--git-dir', gitDir, 'archive', commit], { stdout: 'pipe', stderr: 'pipe' })
  if (archive.exitCode !== 0) throw new Error(`git archive ${commit}: ${archive.stderr}`)
  const tar = Bun.spawnSync(['tar', '-x', '-C', dest], { stdin: archive.stdout, stderr: 'pipe' })
  if (tar.exitCode !== 0) throw new Error(`tar -x into ${dest}: ${tar.stderr}`)
}

/**
 * `src` at its commit in `dest`, with the submodule at `sub` (its recorded commit) taken from
 * `subRepo` or from the clone's own `.git/modules/<sub>`. Reused when already extracted.
 */
export function checkout(src: Source, dest: string, sub: string, subRepo?: string): void {
  const marker = join(dest, '.conformance-commit')
  if (existsSync(marker) && readFileSync(marker, 'utf8') === src.commit) return
  rmSync(dest, { recursive: true, force: true })
  extract(src.gitDir, src.commit, dest)
  const line = run(['git', '--git-dir', src.gitDir, 'ls-tree', src.commit, sub])
  const subCommit = line.split(/\s+/)[2]
  if (!subCommit) throw new Error(`${src.gitDir}: no submodule ${sub} at ${src.ref}`)
  const candidates = [subRepo, join(src.gitDir, 'modules', sub)].filter((p): p is string => !!p && existsSync(p))
  const from = candidates
    .map(gitDirOf)
    .find((g) => Bun.spawnSync(['git', '--git-dir', g, 'cat-file', '-e', subCommit]).exitCode === 0)
  if (!from)
    throw new Error(
      `submodule ${sub} (${subCommit}) not found: clone with --recurse-submodules, or pass --ably-common <clone of ably/ably-common>`,
    )
  extract(from, subCommit, join(dest, sub))
  writeFileSync(marker, src.commit)
}

function npmInstall(dir: string, args: string[]): void {
  const r = Bun.spawnSync(['npm', ...args, '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dir,
    stdout: 'inherit',
    stderr: 'inherit',
  })
  if (r.exitCode !== 0) throw new Error(`npm ${args.join(' ')} in ${dir} failed (exit ${r.exitCode})`)
}

/** What ably-js's node tests load, at the versions its package.json asks for. */
const ABLY_JS_TEST_PACKAGES = [
  'mocha',
  'chai',
  '@ably/vcdiff-decoder',
  'tsx',
  'source-map-support',
  'mocha-junit-reporter',
]

/**
 * Installs ably-js's test dependencies beside `dir` (one folder per client version) and links them in
 * as its node_modules; copies the npm release's `build/` into `dir`.
 */
export function installAblyJs(dir: string, work: string): string {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  const version: string = pkg.version
  const deps = join(work, `ably-js-deps@${version}`)
  if (!existsSync(join(deps, 'node_modules', 'ably', 'build'))) {
    mkdirSync(deps, { recursive: true })
    const wanted: Record<string, string> = { ...pkg.dependencies, ably: version, jsonschema: '^1.4.1' }
    for (const name of ABLY_JS_TEST_PACKAGES) wanted[name] = pkg.devDependencies[name]
    // the repository's `async` is a GitHub fork (requirejs branch) of async 2; node loads npm's
    wanted.async = '^2.6.4'
    writeFileSync(join(deps, 'package.json'), JSON.stringify({ private: true, dependencies: wanted }, null, 2))
    npmInstall(deps, ['install'])
  }
  const link = join(dir, 'node_modules')
  if (!existsSync(link)) symlinkSync(join(deps, 'node_modules'), link)
  if (!existsSync(join(dir, 'build', 'ably-node.js')))
    cpSync(join(deps, 'node_modules', 'ably', 'build'), join(dir, 'build'), { recursive: true })
  return version
}

/** ably-chat-js and ably-ai-transport-js install from their own lock files (no GitHub-hosted packages there). */
export function installFromLock(dir: string): void {
  if (!existsSync(join(dir, 'node_modules', 'vitest'))) npmInstall(dir, ['ci'])
}
