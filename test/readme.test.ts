import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { settingsTable } from '../src/config'

const root = join(import.meta.dir, '..')
const read = (path: string) => readFileSync(join(root, path), 'utf8')
const readme = read('README.md')
const docs = readdirSync(join(root, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`)
const pages = ['README.md', ...docs]

/** The text of a Markdown file outside fenced code blocks and inline code spans. */
function prose(text: string): string {
  let fenced = false
  const lines: string[] = []
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    else if (!fenced) lines.push(line.replace(/`[^`]*`/g, ''))
  }
  return lines.join('\n')
}

/** GitHub's anchors of a Markdown file's headings (lowercased, punctuation dropped, spaces as `-`, repeats numbered). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  let fenced = false
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const heading = !fenced && /^#{1,6} (.*)$/.exec(line)
    if (!heading) continue
    const slug = (heading[1] ?? '')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-')
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    out.add(n ? `${slug}-${n}` : slug)
  }
  return out
}

/** Relative link targets of a Markdown file: `[text](target)` outside code, no scheme. */
function relativeLinks(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1] ?? '')
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
}

test('README starts with the two fresh-machine commands', () => {
  const [first, second] = readme.split('\n')
  expect(first).toBe('npm ci && npm start')
  expect(second).toBe('npm ci && npm test')
})

test('README is a front door of at most 300 lines', () => {
  expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(300)
})

test('the settings table of docs/settings.md matches the config schema', () => {
  expect(read('docs/settings.md')).toContain(settingsTable())
})

describe('links', () => {
  for (const page of pages) {
    test(`every relative link of ${page} resolves`, () => {
      const problems: string[] = []
      for (const target of relativeLinks(read(page))) {
        const [path = '', anchor] = target.split('#', 2)
        const file = path ? resolve(dirname(join(root, page)), decodeURIComponent(path)) : join(root, page)
        if (!file.startsWith(root + '/') || !existsSync(file)) {
          problems.push(`${target}: no file ${relative(root, file)}`)
          continue
        }
        if (anchor && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor))
          problems.push(`${target}: no heading #${anchor} in ${relative(root, file)}`)
        if (anchor && statSync(file).isDirectory()) problems.push(`${target}: an anchor into a directory`)
      }
      expect(problems).toEqual([])
    })
  }

  test('README links every page of docs/', () => {
    const linked = new Set(relativeLinks(readme).map((target) => target.split('#')[0]))
    expect(docs.filter((page) => !linked.has(page))).toEqual([])
  })

  test('the link checker finds links and anchors', () => {
    expect(relativeLinks('[a](docs/x.md#y) `[b](c.md)` [d](https://e.f)\n```\n[g](h.md)\n```')).toEqual(['docs/x.md#y'])
    expect([...anchors('# Chat (`/chat`)\n## Scaling out (Redis Cluster)\n## A\n## A')]).toEqual([
      'chat-chat',
      'scaling-out-redis-cluster',
      'a',
      'a-1',
    ])
  })
})

/** Every source file of the repository (relative paths), for the source paths the documentation names. */
function sourceFiles(dir = root, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue
    const p = join(dir, name)
    if (statSync(p).isDirectory()) sourceFiles(p, out)
    else if (name.endsWith('.ts')) out.push(relative(root, p))
  }
  return out
}

test('every source file the documentation names in code spans exists (a path may be written from src/ or a folder in it)', () => {
  const files = sourceFiles()
  const problems: string[] = []
  // the conformance scorecard names the files of the official suites' repositories, not of this one
  for (const page of pages.filter((p) => p !== 'docs/conformance.md'))
    for (const m of read(page).matchAll(/`([\w.-]+(?:\/[\w.-]+)+\.ts)`/g)) {
      const path = m[1]!
      if (!files.some((f) => f === path || f.endsWith('/' + path))) problems.push(`${page}: ${path}`)
    }
  expect(problems).toEqual([])
})
