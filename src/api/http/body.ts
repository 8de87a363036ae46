import { GatewayError } from '../../errors'
import { jsonNumberOutOfRange } from '../../lib/json-numbers'
import { settleWithin } from '../../lib/sleep'
import { jsonTooDeep } from '../../lib/nesting'
import { NotPlainMsgpack, plainMsgpack } from '../../lib/plain-msgpack'
import { JSON_TYPE, MSGPACK_TYPE } from './responses'

/**
 * Request bodies: read with a byte count and a deadline, nesting bounded before parsing, decoded
 * from JSON, msgpack or form-urlencoded. Every body of every route is read here (the Elysia
 * parse hook and the publish route), so these bounds hold everywhere.
 */
export interface BodyLimits {
  maxBodySize: number
  maxNestingDepth: number
  requestBodyTimeoutMs: number
}

/** Refusals that leave part of the body unread: the connection is closed after the answer. */
const CLOSE = { headers: { connection: 'close' } }

const tooLarge = (max: number) => new GatewayError(40009, `Request body too large (limit is ${max} bytes)`, CLOSE)

const tooSlow = (ms: number) => new GatewayError(40800, `Request body not received within ${ms} ms`, CLOSE)

const tooDeep = (max: number) =>
  new GatewayError(40001, `Invalid request body: nested deeper than ${max} levels of objects and arrays`)

/** The declared length of a request body (its Content-Length header), null when chunked or absent. */
const declaredLength = (request: Request): string | null => request.headers.get('content-length')

/**
 * 413 when the declared length is over the limit (checked before anything is read). `len`: the
 * header when the caller has read it already (each header read costs ~0.1 us).
 */
export function checkDeclaredLength(request: Request, max: number, len = declaredLength(request)): void {
  if (len !== null && Number(len) > max) throw tooLarge(max)
}

/** `p`, or a 408 when it has not settled within `ms`. */
export const withinDeadline = <T>(p: Promise<T>, ms: number): Promise<T> => settleWithin(p, ms, tooSlow)

const EMPTY = new Uint8Array(0)

/**
 * The whole body, within the size limit and the deadline. A declared length was checked before
 * (the runtime delivers no more than it declares) and is read in one piece; a chunked body is
 * counted as it arrives and refused as soon as it passes the limit.
 */
export async function readBody(request: Request, s: BodyLimits, length = declaredLength(request)): Promise<Uint8Array> {
  checkDeclaredLength(request, s.maxBodySize, length)
  // before request.body, whose first use wraps the body in a stream (~1 us per request)
  if (length !== null) return new Uint8Array(await withinDeadline(request.arrayBuffer(), s.requestBodyTimeoutMs))
  return request.body ? readChunked(request.body, s) : EMPTY
}

/** A chunked body, counted as it arrives, within the one deadline of every body (`withinDeadline`). */
async function readChunked(body: ReadableStream<Uint8Array>, s: BodyLimits): Promise<Uint8Array> {
  const reader = body.getReader()
  try {
    return await withinDeadline(readAll(reader, s.maxBodySize), s.requestBodyTimeoutMs)
  } catch (e) {
    // too large or too slow: the rest is not read (a read pending past the deadline ends with it)
    reader.cancel().catch(() => {})
    throw e
  }
}

async function readAll(reader: ReadableStreamDefaultReader<Uint8Array>, max: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) throw tooLarge(max)
    chunks.push(value)
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)
}

const outOfRange = (number: string) =>
  new GatewayError(
    40001,
    `Invalid request body: the number ${number.length > 40 ? number.slice(0, 37) + '...' : number} is out of range of a 64-bit float`,
  )

/**
 * JSON text to a value, refusing nesting deeper than `maxDepth` before parsing, and a number the
 * parser would turn into Infinity or 0 (stored, it would come back as null or 0).
 */
export function parseJson(text: string, maxDepth: number): unknown {
  if (jsonTooDeep(text, maxDepth)) throw tooDeep(maxDepth)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new GatewayError(40001, 'Invalid request body: malformed JSON')
  }
  const number = jsonNumberOutOfRange(text)
  if (number !== undefined) throw outOfRange(number)
  return value
}

function parseMsgpack(bytes: Uint8Array, maxDepth: number): unknown {
  const r = plainMsgpack(bytes, maxDepth, true)
  if (!(r instanceof NotPlainMsgpack)) return r
  if (r.problem === 'too deep') throw tooDeep(maxDepth)
  if (r.problem === 'not finite')
    throw new GatewayError(40001, 'Invalid request body: a msgpack float is NaN or infinite (JSON cannot hold it)')
  if (r.problem === 'extension')
    throw new GatewayError(40001, 'Invalid request body: msgpack extension types are not accepted')
  throw new GatewayError(40001, 'Invalid request body: malformed msgpack')
}

const decoder = new TextDecoder()

/** The media type of a Content-Type header value, lower case, without parameters. */
export function mediaType(contentType: string): string {
  if (contentType === JSON_TYPE || contentType === MSGPACK_TYPE) return contentType
  return contentType.split(';')[0]!.trim().toLowerCase()
}

const isJson = (type: string) => type === JSON_TYPE || type === 'text/plain' || type === ''

/** A body as received by `receiveBody`: text (JSON with a declared length: one copy less than bytes) or bytes. */
export type Received = string | ArrayBuffer | Uint8Array

/**
 * The body of a request of media type `type` (`mediaType`), within the size limit and the
 * deadline: one promise, not an async function, so that a route reads its body with one await
 * (`decodeReceived` decodes it). `length`: the Content-Length header, when the caller has read it.
 */
export function receiveBody(
  request: Request,
  type: string,
  s: BodyLimits,
  length = declaredLength(request),
): Promise<Received> {
  if (length === null) return readBody(request, s, length)
  checkDeclaredLength(request, s.maxBodySize, length)
  // a declared length, so no count as it arrives (the runtime delivers no more than it declares)
  return withinDeadline<Received>(isJson(type) ? request.text() : request.arrayBuffer(), s.requestBodyTimeoutMs)
}

/**
 * A received body decoded by its media type, within the limits; undefined when empty. JSON (also
 * as text/plain or with no type) and msgpack must be an object or an array; form-urlencoded gives
 * an object of strings; other types are refused.
 */
export function decodeReceived(received: Received, type: string, s: BodyLimits): unknown {
  // text only for JSON (receiveBody)
  if (typeof received === 'string')
    return received.length === 0 ? undefined : structured(parseJson(received, s.maxNestingDepth))
  const bytes = received instanceof Uint8Array ? received : new Uint8Array(received)
  if (bytes.length === 0) return undefined
  if (isJson(type)) return structured(parseJson(decoder.decode(bytes), s.maxNestingDepth))
  if (type === MSGPACK_TYPE) return structured(parseMsgpack(bytes, s.maxNestingDepth))
  if (type === 'application/x-www-form-urlencoded')
    return Object.fromEntries(new URLSearchParams(decoder.decode(bytes)))
  throw new GatewayError(
    40001,
    `Unsupported Content-Type "${type}": send application/json, application/x-msgpack or application/x-www-form-urlencoded`,
  )
}

/**
 * A request body decoded by its Content-Type, within the limits (`receiveBody`, `decodeReceived`).
 * The one decoder of every route (the Elysia parse hook and the publish route): the same bytes get
 * the same answer everywhere. `length`: the Content-Length header, when the caller has read it.
 */
export async function decodeBody(
  request: Request,
  contentType: string,
  s: BodyLimits,
  length = declaredLength(request),
): Promise<unknown> {
  const type = mediaType(contentType)
  return decodeReceived(await receiveBody(request, type, s, length), type, s)
}

/**
 * What the parse hook hands Elysia for a route that reads its own body (see `bodyParser`):
 * the body is left unread for the handler. An empty object, so the route's body schema (which
 * documents what the handler reads) accepts it.
 */
export const OWN_BODY: Readonly<Record<string, never>> = Object.freeze({})

/**
 * The body parser of every Elysia route. Bodies are read for every content type, so Elysia's own
 * parsers (unbounded, and multipart would JSON-parse its fields) never run on a body; an empty
 * body is no body. Routes for which `ownBody(method, route)` holds get OWN_BODY and read it
 * themselves (the publish route, which serves Bun's router with the same function).
 */
export function bodyParser(s: BodyLimits, ownBody: (method: string, route: string) => boolean = () => false) {
  return (request: Request, contentType: string, route: string): Promise<unknown> | typeof OWN_BODY =>
    ownBody(request.method, route) ? OWN_BODY : decodeBody(request, contentType, s)
}

/** Every body of this API is an object or an array; a bare string or number is refused here. */
export function structured(value: unknown): unknown {
  const plain =
    Array.isArray(value) ||
    (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype)
  if (!plain) throw new GatewayError(40001, 'Invalid request body: must be an object or an array')
  return value
}
