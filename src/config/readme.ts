/** `bun src/config/readme.ts`: rewrites the settings table of docs/settings.md from the schema. */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { settingsTable } from '.'

const path = join(import.meta.dir, '..', '..', 'docs', 'settings.md')
const text = readFileSync(path, 'utf8')
const start = text.indexOf('| Variable | Default | Meaning |')
if (start < 0) throw new Error(`${path}: no settings table (a line starting "| Variable | Default | Meaning |")`)
// The table runs to the next blank line, or to the end of the file.
const blank = text.indexOf('\n\n', start)
const end = blank < 0 ? text.trimEnd().length : blank
writeFileSync(path, text.slice(0, start) + settingsTable() + (blank < 0 ? '\n' : text.slice(end)))
