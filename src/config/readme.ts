/** `bun src/config/readme.ts`: rewrites the settings table of README.md from the schema. */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { settingsTable } from '.'

const path = join(import.meta.dir, '..', '..', 'README.md')
const text = readFileSync(path, 'utf8')
const start = text.indexOf('| Variable | Default | Meaning |')
const end = text.indexOf('\n\n', start)
writeFileSync(path, text.slice(0, start) + settingsTable() + text.slice(end))
