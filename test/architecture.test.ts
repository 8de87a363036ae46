import { expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

const SRC = join(import.meta.dir, '..', 'src')

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : []
  })
}

/** Which top-level areas each area may import (architecture doc: import direction). */
const ALLOWED: Record<string, string[]> = {
  lib: ['lib'],
  errors: ['errors', 'lib'],
  config: ['config', 'errors', 'lib'],
  core: ['core', 'errors', 'lib'],
  backend: ['backend', 'core', 'errors', 'lib'],
  api: ['api', 'core', 'errors', 'lib'],
}
const FORBIDDEN_PACKAGES: Record<string, string[]> = { core: ['elysia', 'redis', 'msgpackr', 'bun:sqlite'] }

test('imports follow the architecture direction', () => {
  const problems: string[] = []
  for (const file of files(SRC)) {
    const rel = relative(SRC, file)
    const area = rel.includes('/') ? rel.split('/')[0]! : 'root'
    if (area === 'root') continue
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/from '([^']+)'/g)) {
      const spec = m[1]!
      if (spec.startsWith('.')) {
        const target = relative(SRC, join(file, '..', spec))
        const targetArea = target.split('/')[0]!
        if (!ALLOWED[area]!.includes(targetArea)) problems.push(`${rel} imports ${target}`)
      } else if (FORBIDDEN_PACKAGES[area]?.some((p) => spec === p || spec.startsWith(p + '/'))) {
        problems.push(`${rel} imports package ${spec}`)
      }
    }
    if (area !== 'config' && /process\.env/.test(text)) problems.push(`${rel} reads process.env (only config may)`)
  }
  expect(problems).toEqual([])
})
