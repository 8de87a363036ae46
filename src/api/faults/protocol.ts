import { Action } from '../../core/connections'
import { NotPlainMsgpack, plainMsgpack } from '../../lib/plain-msgpack'
import type { ClientFrame, Frame } from '../realtime/frames'

/**
 * The realtime protocol as a fault session sees it: action names and numbers (a rule names an
 * action either way, "ATTACH" or "10"), and frames decoded for matching and for the event log.
 */
const NUMBER_OF: Record<string, number> = Action

/** The action number a rule's `action` names (a name in any case, or a number), or undefined. */
export function actionNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= 255 ? v : undefined
  if (typeof v !== 'string' || v === '') return undefined
  if (/^\d{1,3}$/.test(v)) return actionNumber(Number(v))
  return NUMBER_OF[v.toUpperCase()]
}

/** Deepest nesting decoded for the log (the gateway refuses client frames deeper than this too). */
const MAX_DEPTH = 64

const decoder = new TextDecoder()

/** Binary values as base64 strings, so the log is JSON (an action's `data` of a msgpack frame). */
function plain(v: unknown, depth = 0): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
  if (depth > MAX_DEPTH || v === null || typeof v !== 'object') return v
  if (Array.isArray(v)) return v.map((x) => plain(x, depth + 1))
  const out: Record<string, unknown> = {}
  for (const k in v) out[k] = plain((v as Record<string, unknown>)[k], depth + 1)
  return out
}

/** A frame as the protocol message it carries (JSON text or msgpack binary), or undefined when it is none. */
export function decodeFrameForLog(frame: Frame | ClientFrame): Record<string, unknown> | undefined {
  let value: unknown
  if (typeof frame === 'string') {
    try {
      value = JSON.parse(frame)
    } catch {
      return undefined
    }
  } else {
    const bytes = frame instanceof Uint8Array ? frame : new Uint8Array(frame)
    const r = plainMsgpack(bytes, MAX_DEPTH)
    if (r instanceof NotPlainMsgpack) {
      // a text protocol message sent in a binary frame is still one
      try {
        value = JSON.parse(decoder.decode(bytes))
      } catch {
        return undefined
      }
    } else value = plain(r)
  }
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}

export const frameBytes = (frame: Frame | ClientFrame): number =>
  typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength
