import { Packr } from 'msgpackr'
import type { RingCodec } from './ring'
import type { Message } from '../../core/types'
import { utf8Text, writeAscii } from '../../lib/encoding'
import { ID_ON_CONNECTION, indexOf, msgSerialOf, type IdOnConnection } from '../../core/model/ids'

/** Extras are msgpack (they may hold binary); binary is copied out on decode, since the ring reuses its buffer. */
const packr = new Packr({ useRecords: false, copyBuffers: true })

const NAME = 1,
  ENCODING = 2,
  TEXT = 4,
  BINARY = 8,
  EXTRAS = 16,
  CLIENT_ID = 32,
  CONNECTION_ID = 64,
  ACTION = 128,
  MUTATION = 256,
  ID_ON_CONNECTION_NUMBERS = 512

/** Extras and mutation of the message being pushed, packed by `maxSize` and written by `write` (called back to back). */
let packedExtras: Uint8Array | undefined
let packedMutation: Uint8Array | undefined

/** Node's Buffer method (Bun has it too) behind `write(s, offset, 'utf8')`, without the encoding's lookup. */
type Utf8Writer = Buffer & { utf8Write(s: string, offset: number): number }

/**
 * Writes `s` as UTF-8 after a 4-byte length (the ring has room for 3 bytes per UTF-16 unit). A
 * short ASCII string (ids, names, connection ids) is copied by code unit: a native call costs
 * more than its few bytes.
 */
function writeString(t: Buffer, o: number, s: string): number {
  if (s.length <= SHORT && writeAscii(t, o + 4, s)) return writeLength(t, o, s.length)
  return writeLength(t, o, (t as Utf8Writer).utf8Write(s, o + 4))
}
const SHORT = 32

function writeBytes(t: Buffer, o: number, b: Uint8Array): number {
  t.set(b, o + 4)
  return writeLength(t, o, b.byteLength)
}

/** The 4-byte length `n` at `o`; returns where the `n` bytes after it end. */
const writeLength = (t: Uint8Array, o: number, n: number): number => writeU32(t, o, n) + n

function writeU32(t: Uint8Array, o: number, n: number): number {
  t[o] = n & 0xff
  t[o + 1] = (n >>> 8) & 0xff
  t[o + 2] = (n >>> 16) & 0xff
  t[o + 3] = n >>> 24
  return o + 4
}

/** The 4-byte integer at `o` (its top byte added, not or-ed: an or would make 2^31 and above negative). */
const readU32 = (b: Uint8Array, o: number): number =>
  (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16)) + b[o + 3]! * 2 ** 24

/**
 * A ring message: two bytes (little-endian) of which fields are present, then id and each present
 * field (UTF-8 strings and bytes after a 4-byte length, extras and mutation as msgpack, action a
 * 4-byte integer). Written straight into the ring's buffer: pushing a message allocates nothing
 * but what extras and a mutation need. The id of a realtime publish's message, whose drafts carry
 * it as numbers (model/ids.ts), is those numbers (a 4-byte msgSerial and a 2-byte index), made
 * again with the connection id when read: its characters are neither read nor written per publish.
 */
export const ringCodec: RingCodec = {
  maxSize(m) {
    let n = 6 + 3 * m.id.length
    if (m.name !== undefined) n += 4 + 3 * m.name.length
    if (m.encoding !== undefined) n += 4 + 3 * m.encoding.length
    if (m.data !== undefined) n += 4 + (typeof m.data === 'string' ? 3 * m.data.length : m.data.byteLength)
    packedExtras = m.extras !== undefined ? packr.pack(m.extras) : undefined
    if (packedExtras) n += 4 + packedExtras.byteLength
    if (m.clientId !== undefined) n += 4 + 3 * m.clientId.length
    if (m.connectionId !== undefined) n += 4 + 3 * m.connectionId.length
    if (m.action !== undefined) n += 4
    packedMutation = m.mutation !== undefined ? packr.pack(m.mutation) : undefined
    if (packedMutation) n += 4 + packedMutation.byteLength
    return n
  },

  write(m, t, offset) {
    let flags = 0
    let o: number
    const onConnection = (m as IdOnConnection)[ID_ON_CONNECTION]
    if (onConnection !== undefined && m.connectionId !== undefined) {
      flags |= ID_ON_CONNECTION_NUMBERS
      o = writeU32(t, offset + 2, msgSerialOf(onConnection))
      const index = indexOf(onConnection)
      t[o] = index & 0xff
      t[o + 1] = index >>> 8
      o += 2
    } else o = writeString(t, offset + 2, m.id)
    if (m.name !== undefined) {
      flags |= NAME
      o = writeString(t, o, m.name)
    }
    if (m.encoding !== undefined) {
      flags |= ENCODING
      o = writeString(t, o, m.encoding)
    }
    if (typeof m.data === 'string') {
      flags |= TEXT
      o = writeString(t, o, m.data)
    } else if (m.data !== undefined) {
      flags |= BINARY
      o = writeBytes(t, o, m.data)
    }
    if (packedExtras) {
      flags |= EXTRAS
      o = writeBytes(t, o, packedExtras)
      packedExtras = undefined
    }
    if (m.clientId !== undefined) {
      flags |= CLIENT_ID
      o = writeString(t, o, m.clientId)
    }
    if (m.connectionId !== undefined) {
      flags |= CONNECTION_ID
      o = writeString(t, o, m.connectionId)
    }
    if (m.action !== undefined) {
      flags |= ACTION
      o = writeU32(t, o, m.action)
    }
    if (packedMutation) {
      flags |= MUTATION
      o = writeBytes(t, o, packedMutation)
      packedMutation = undefined
    }
    t[offset] = flags & 0xff
    t[offset + 1] = flags >>> 8
    return o
  },

  decode(b, serial, timestamp) {
    const flags = b[0]! | (b[1]! << 8)
    at = 2
    let msgSerial = -1
    let index = 0
    if (flags & ID_ON_CONNECTION_NUMBERS) {
      msgSerial = readU32(b, 2)
      index = b[6]! | (b[7]! << 8)
      at = 8
    }
    // the id first whatever its form (every entry read has one shape)
    const m = { id: msgSerial < 0 ? text(b) : '' } as Message
    if (flags & NAME) m.name = text(b)
    if (flags & ENCODING) m.encoding = text(b)
    if (flags & TEXT) m.data = text(b)
    // a copy of its own (a Buffer's slice() would be a view of the ring's bytes, written over later)
    else if (flags & BINARY) m.data = new Uint8Array(field(b))
    if (flags & EXTRAS) m.extras = packr.unpack(field(b)) as Message['extras']
    if (flags & CLIENT_ID) m.clientId = text(b)
    if (flags & CONNECTION_ID) m.connectionId = text(b)
    if (msgSerial >= 0) m.id = `${m.connectionId}:${msgSerial}:${index}`
    if (flags & ACTION) {
      m.action = readU32(b, at)
      at += 4
    }
    if (flags & MUTATION) m.mutation = packr.unpack(field(b)) as Message['mutation']
    m.serial = serial
    m.timestamp = timestamp
    return m
  },
}

/** Where `decode` reads next (one decode at a time: nothing it calls decodes a ring entry). */
let at = 0

/** Steps over the next length-prefixed field of `b`: returns where its bytes start (`at`: where they end). */
function next(b: Uint8Array): number {
  const start = at + 4
  at = start + readU32(b, at)
  return start
}

/** The next field as text, read in place. */
const text = (b: Uint8Array): string => utf8Text(b, next(b), at)

/** The next field, a view of its bytes. */
const field = (b: Uint8Array): Uint8Array => b.subarray(next(b), at)
