import { expect, test } from 'bun:test'
import { countDataLines } from './data-lines'

const stream =
  ':keepalive\n\nid: a\nevent: message\ndata: {"x":1}\n\n' +
  'data: only\n\n' +
  'id: b\nevent: message\ndata: {"data:":2}\n\n'

test('every data line counts once, wherever the chunks split the stream', () => {
  for (let size = 1; size <= stream.length; size++) {
    let tail: Buffer = Buffer.from('\n')
    let total = 0
    for (let at = 0; at < stream.length; at += size) {
      const [n, t] = countDataLines(Buffer.from(stream.slice(at, at + size)), tail)
      total += n
      tail = t
    }
    expect(total).toBe(3)
  }
})

test('a stream that opens with a data line counts it', () => {
  expect(countDataLines(Buffer.from('data: first\n\n'), Buffer.from('\n'))[0]).toBe(1)
})
