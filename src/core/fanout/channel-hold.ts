import type { Timers } from '../ports'
import type { Message } from '../types'
import { isWhole } from '../model/appends'
import type { KeyOf } from '../model/conflation-key'

/**
 * How a namespace rule holds a channel's deliveries: server-side batching (`batchingEnabled`,
 * `batchingInterval`) or conflation (`conflationEnabled`, `conflationInterval`, `conflationKey`).
 */
export interface HoldRule {
  intervalMs: number
  /** Conflation: the key of a message; only the latest message of each key in an interval goes. */
  keyOf?: KeyOf
}

/** What one channel may hold on a node; past either, what is held goes at once. */
export interface HoldBounds {
  maxMessages: number
  maxBytes: number
}

/** Entries per delivered batch (the hosted service's batches hold up to 200 messages). */
export const MAX_BATCH = 200

const sizeOf = (m: Message): number =>
  (m.data === undefined ? 0 : typeof m.data === 'string' ? m.data.length : m.data.byteLength) + (m.name?.length ?? 0)

/**
 * Batching or conflation of one channel's deliveries on this node, ahead of every subscriber (the
 * hub holds one per channel whose rule asks for it; all its subscribers get the same batches, so
 * the transports still encode each once). The first entry opens an interval; what comes during
 * it is held and goes, in channel order, as batches of at most MAX_BATCH when it ends.
 *
 * In an interval, a change that replaces a whole message (an update, a delete) drops the earlier
 * changes of that message (it holds what they did); conflation also keeps only the latest new
 * message of each key. Appends are never joined here (a subscriber resuming between two of them
 * would get one twice; subscriptions join appends themselves, append-rollup.ts), nor is anything
 * else dropped (presence, LiveObjects operations, annotations). History, rewind and resume read
 * the channel's log, which keeps every message.
 */
export class ChannelHold {
  private held: Array<Message | undefined> = []
  private count = 0
  private bytes = 0
  /** Conflation key -> index of the message held for it. */
  private keys?: Map<string, number>
  /** Message serial -> indexes of its changes held. */
  private changes?: Map<string, number[]>
  private cancel?: () => void

  constructor(
    private readonly channel: string,
    private readonly rule: HoldRule,
    private readonly bounds: HoldBounds,
    private readonly timers: Timers,
    private readonly emit: (batch: Message[]) => void,
  ) {}

  push(msgs: Message[]): void {
    for (const m of msgs) this.add(m)
    if (this.count >= this.bounds.maxMessages || this.bytes >= this.bounds.maxBytes) this.flush()
    else this.cancel ??= this.timers.after(this.rule.intervalMs, () => this.flush())
  }

  dispose(): void {
    this.cancel?.()
    this.cancel = undefined
    this.reset()
  }

  private add(m: Message) {
    const at = this.held.length
    if (m.kind === undefined && this.rule.keyOf) {
      const keys = (this.keys ??= new Map())
      const key = this.rule.keyOf(m, this.channel)
      this.drop(keys.get(key))
      keys.set(key, at)
    } else if (m.kind === 'mutation') {
      const changes = (this.changes ??= new Map())
      const ref = m.mutation!.serial
      const earlier = changes.get(ref)
      if (!earlier) changes.set(ref, [at])
      else if (isWhole(m)) {
        for (const k of earlier) this.drop(k)
        changes.set(ref, [at])
      } else earlier.push(at)
    }
    this.held.push(m)
    this.count++
    this.bytes += sizeOf(m)
  }

  private drop(k: number | undefined) {
    if (k === undefined) return
    const m = this.held[k]
    if (!m) return
    this.held[k] = undefined
    this.count--
    this.bytes -= sizeOf(m)
  }

  private flush() {
    this.cancel?.()
    this.cancel = undefined
    const out = this.held.filter((m): m is Message => m !== undefined)
    this.reset()
    for (let i = 0; i < out.length; i += MAX_BATCH)
      this.emit(out.length <= MAX_BATCH ? out : out.slice(i, i + MAX_BATCH))
  }

  private reset() {
    this.held = []
    this.count = 0
    this.bytes = 0
    this.keys = undefined
    this.changes = undefined
  }
}
