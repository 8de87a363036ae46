import { GatewayError } from '../../errors'
import type { JsonObject, JsonValue } from './ports'

/** Deepest nesting of objects and arrays accepted in a patch. */
export const MAX_DEPTH = 32

export const isJsonObject = (v: unknown): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype

/** Own, enumerable data property, even for a key such as `__proto__`. */
function put(o: JsonObject, key: string, value: JsonValue) {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true })
}

/**
 * The merge rule of PATCH: RFC 7396 JSON Merge Patch.
 * - a patch that is an object is merged key by key into the target (a target that is not an
 *   object is replaced by `{}` first), recursively for nested objects;
 * - a `null` value removes the key (so state never holds a `null` member; `null` inside arrays is kept);
 * - any other value (string, number, boolean, array) replaces the target value as a whole.
 * The target is not changed; the result shares unchanged subtrees with it.
 */
export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return patch
  const out: JsonObject = {}
  if (isJsonObject(target)) for (const k of Object.keys(target)) put(out, k, target[k]!)
  for (const k of Object.keys(patch)) {
    const v = patch[k]!
    if (v === null) delete out[k]
    else put(out, k, mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v))
  }
  return out
}

const invalid = (why: string) => new GatewayError(40001, `Invalid object data: ${why}`)

function checkValue(v: unknown, path: string, depth: number): void {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw invalid(`${path} is not a finite number`)
    return
  }
  if (depth >= MAX_DEPTH) throw invalid(`nested deeper than ${MAX_DEPTH} levels`)
  if (Array.isArray(v)) {
    v.forEach((x, i) => checkValue(x, `${path}[${i}]`, depth + 1))
    return
  }
  if (!isJsonObject(v)) throw invalid(`${path} is not a JSON value`)
  for (const k of Object.keys(v)) {
    if (!k.isWellFormed()) throw invalid(`${path} has a key that is not well-formed Unicode`)
    checkValue(v[k], `${path}.${k}`, depth + 1)
  }
}

/** Validates the `data` of a PATCH: a JSON object (no binary, no non-finite numbers), bounded depth. */
export function checkPatch(data: unknown): JsonObject {
  if (!isJsonObject(data)) throw invalid('data must be an object')
  checkValue(data, 'data', 0)
  return data
}
