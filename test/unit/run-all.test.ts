import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describeHalf, failed, failuresOf, summaryOf } from '../run-all'

/** `npm test` (test/run-all.ts): both halves, and one summary of both read from bun's own. */
const BUN_END = `
(pass) last one [1.00ms]

 1290 pass
 3 skip
 1 todo
 2 fail
 1 error
 4567 expect() calls
Ran 1297 tests across 140 files. [301.12s]
`

test('counts are read from the closing summary of bun test; none without it', () => {
  expect(summaryOf(`bun test v1.4.5\n${BUN_END}`)).toEqual({ pass: 1290, fail: 2, skip: 3, todo: 1, error: 1 })
  expect(summaryOf('\n 7 pass\n 0 fail\nRan 7 tests across 1 file. [5.00ms]\n')).toEqual({
    pass: 7,
    fail: 0,
    skip: 0,
    todo: 0,
    error: 0,
  })
  // in colour (a terminal)
  const coloured =
    '\x1b[0m\x1b[32m 1 pass\x1b[0m\n\x1b[0m\x1b[2m 0 fail\x1b[0m\nRan 1 test across 1 file. \x1b[0m\x1b[2m[5.00ms]\n'
  expect(summaryOf(coloured)).toEqual({ pass: 1, fail: 0, skip: 0, todo: 0, error: 0 })
  // a test printing something that looks like a count, then a crash before the summary
  expect(summaryOf('(pass) x\n 12 pass\n 0 fail\nSegmentation fault\n')).toBeUndefined()
})

test('a line per half says passed and failed, and what else happened; a half that crashed fails', () => {
  const counts = { pass: 10, fail: 0, skip: 2, todo: 0, error: 0 }
  const ok = { name: 'embedded', script: 'test:embedded', code: 0, seconds: 12.4, counts }
  expect(describeHalf(ok)).toBe('embedded: 10 passed, 0 failed (2 skipped, 12 s)')
  expect(failed(ok)).toBe(false)
  const red = { ...ok, name: 'redis', code: 1, counts: { ...counts, skip: 0, fail: 1 } }
  expect(describeHalf(red)).toBe('redis: 10 passed, 1 failed (12 s)')
  expect(failed(red)).toBe(true)
  const outside = { ...ok, code: 1, counts: { ...counts, skip: 0 } }
  expect(describeHalf(outside)).toBe('embedded: 10 passed, 0 failed (exited with code 1, 12 s)')
  expect(failed(outside)).toBe(true)
  const crashed = { ...ok, code: 134, counts: undefined }
  expect(describeHalf(crashed)).toStartWith('embedded: did not finish (exited with code 134')
  expect(failed(crashed)).toBe(true)
})

test('npm test is the runner; each half has a script of its own', () => {
  const { scripts } = JSON.parse(readFileSync(join(import.meta.dir, '..', '..', 'package.json'), 'utf8'))
  expect(scripts.test).toBe('bun test/run-all.ts')
  expect(scripts['test:embedded']).toStartWith('bun test ')
  expect(scripts['test:redis']).toStartWith('TEST_BACKEND=redis bun test ')
  expect(readFileSync(join(import.meta.dir, '..', 'run-all.ts'), 'utf8')).toContain("script: 'test:redis'")
})

test("the failures' digest names each failing test once, with its error and where it was thrown", () => {
  const output = [
    '(pass) ok [0.05ms]',
    "3 | test('bad expect', () => { expect([1,2]).toEqual([1,3]) })",
    '                                             ^',
    'error: expect(received).toEqual(expected)',
    '',
    '  [',
    '    1,',
    '-   3,',
    '+   2,',
    '  ]',
    '      at <anonymous> (/tmp/a.test.ts:3:42)',
    '(fail) suite > bad expect [4.15ms]',
    '\x1b[31merror\x1b[0m: nothing matching (x) => x.name === "n0" within 10000 ms; seen []',
    '      at <anonymous> (/tmp/a.test.ts:4:43)',
    '(fail) suite > bad throw [10001.18ms]',
    '(pass) ok2 [0.01ms]',
    '',
    '2 tests failed:',
    '(fail) suite > bad expect [4.15ms]',
    '(fail) suite > bad throw [10001.18ms]',
    '',
    ' 2 pass',
  ].join('\n')
  expect(failuresOf(output)).toEqual([
    'suite > bad expect: error: expect(received).toEqual(expected) [ 1, -   3, +   2, ] (at <anonymous> (/tmp/a.test.ts:3:42))',
    'suite > bad throw: error: nothing matching (x) => x.name === "n0" within 10000 ms; seen [] (at <anonymous> (/tmp/a.test.ts:4:43))',
  ])
  expect(failuresOf('(pass) a [1.00ms]\n(fail) b\n')).toEqual(['b: no error printed'])
  expect(failuresOf(BUN_END)).toEqual([])
})
