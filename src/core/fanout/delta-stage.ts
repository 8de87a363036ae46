import type { Message } from '../types'
import { vcdiffEncode } from '../../lib/vcdiff'
import { payloadOf } from './delta-payload'

/** The message a subscriber decodes its next delta against: its id (`extras.delta.from`) and payload bytes. */
export interface DeltaBase {
  readonly id: string
  readonly bytes: Uint8Array
}

/** A delta is sent only when it is at most this share of the payload: smaller on the wire in msgpack and, base64-encoded, in JSON. */
const MAX_RATIO = 0.75

interface Encoded {
  /** The batch as delivered: the input itself when no message became a delta. */
  out: Message[]
  /** `out` cut before each delta (one frame each); absent when it holds none. */
  frames?: Message[][]
  /** The subscriber's base after it. */
  base?: DeltaBase
}

/**
 * Deltas of a batch, per base, cached on the batch: the hub hands one array to every subscriber
 * of the channel for one event-loop turn, and subscribers that received the same previous
 * message hold the same `DeltaBase` object, so a batch is encoded once per base however many
 * subscribers share it, and every one of them gets the same output arrays (whose frames the
 * transports then encode once per wire format). The cache dies with the batch.
 */
const encoded = new WeakMap<Message[], Map<DeltaBase | null, Encoded>>()

/**
 * The delta stage of one subscription to one channel (`delta=vcdiff`, RTL18-RTL21): every message
 * after the first goes as a VCDIFF delta against the previous message this subscriber received on
 * the channel (`extras.delta` `{from, format}`, `vcdiff` appended to the encoding), or whole
 * where the delta would not be at most MAX_RATIO of the payload, where either payload is over
 * `maxBytes`, or where the subscriber holds no base (its first message, one after a message
 * without data). Bounded work: one encode per message and base, linear in the payloads, which
 * are at most `maxBytes`.
 *
 * For realtime, a delta starts a frame of its own (`frames`): a client that cannot decode a delta
 * (RTL18) drops the whole MESSAGE frame it is in and re-attaches from the frame before, so a
 * replay framed as a whole message followed by deltas would be dropped again at every re-attach
 * (a client whose decoder always fails would never move on); framed so, each re-attach moves it
 * on by at least one message, and a lost base costs one whole message.
 */
export class DeltaStage {
  private base?: DeltaBase

  constructor(
    private readonly maxBytes: number,
    /** Messages of this connection are not delivered to it (`echo=false`): they are not in its chain. */
    private readonly exceptConnection?: string,
  ) {}

  /** The batch as this subscriber receives it. Never changes `batch`. */
  apply(batch: Message[]): Message[] {
    return this.encode(batch).out
  }

  /** The batch as this subscriber receives it, in the frames it goes in (a frame per delta). */
  framed(batch: Message[]): Message[][] {
    const r = this.encode(batch)
    return r.frames ?? [r.out]
  }

  private encode(batch: Message[]): Encoded {
    const except = this.exceptConnection
    const input =
      except !== undefined && batch.some((m) => isChained(m) && m.connectionId === except)
        ? batch.filter((m) => !(isChained(m) && m.connectionId === except))
        : batch
    let byBase = encoded.get(input)
    if (!byBase) encoded.set(input, (byBase = new Map()))
    const key = this.base ?? null
    let r = byBase.get(key)
    if (!r) byBase.set(key, (r = encodeBatch(input, this.base, this.maxBytes)))
    this.base = r.base
    return r
  }
}

/** Entries a client decodes with its delta base, in order (MESSAGE frames): messages and their new versions. */
const isChained = (m: Message) => m.kind === undefined || m.kind === 'mutation'

function encodeBatch(batch: Message[], base: DeltaBase | undefined, maxBytes: number): Encoded {
  let out: Message[] | undefined
  let frames: Message[][] | undefined
  let from = 0 // start of the frame being made
  for (let i = 0; i < batch.length; i++) {
    const m = batch[i]!
    if (m.kind === 'summary') {
      base = undefined // a MESSAGE without data: the client keeps no base after it
      continue
    }
    if (!isChained(m)) continue // presence, LiveObjects, annotations: decoded apart
    const p = payloadOf(m)
    if (!p || p.bytes.length > maxBytes || !m.id) {
      base = undefined
      continue
    }
    if (base) {
      const delta = vcdiffEncode(base.bytes, p.bytes, Math.floor(p.bytes.length * MAX_RATIO))
      if (delta) {
        out ??= batch.slice()
        out[i] = deltaMessage(m, delta, p.steps, base.id)
        if (i > from) (frames ??= []).push(out.slice(from, i))
        from = i
      }
    }
    base = { id: m.id, bytes: p.bytes }
  }
  if (!out) return { out: batch, base }
  ;(frames ??= []).push(out.slice(from))
  return { out, frames, base }
}

function deltaMessage(m: Message, delta: Uint8Array, steps: string | undefined, from: string): Message {
  return {
    ...m,
    data: delta,
    encoding: steps ? `${steps}/vcdiff` : 'vcdiff',
    extras: { ...m.extras, delta: { from, format: 'vcdiff' } },
  }
}
