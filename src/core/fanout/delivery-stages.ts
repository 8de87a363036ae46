import type { Namespaces } from '../control/namespaces'
import type { Timers } from '../ports'
import type { Message, Namespace } from '../types'
import { AppendRollup } from './append-rollup'
import { ChannelHold, type HoldRule } from './channel-hold'
import { compileKey, type KeyOf } from '../model/conflation-key'
import { LateJoin } from './late-join'
import type { StreamSession } from './session'
import { StagedSink, type StageMaker } from './stages'

/** Settings of the delivery stages (see src/config/schema.ts). */
export interface StageSettings {
  /** The append rollup window of a subscription that does not ask for one (ms; 0: none). */
  appendRollupWindowMs: number
  appendRollupMaxMessages: number
  appendRollupMaxBytes: number
  /** What batching or conflation may hold of one channel on a node. */
  deliveryHoldMaxMessages: number
  deliveryHoldMaxBytes: number
}

/** The longest append rollup window a subscription may ask for (ms; the hosted service's). */
export const MAX_APPEND_ROLLUP_WINDOW_MS = 500

/** The whole data of an appended message as of an append (channels/mutable-messages.ts `joinedAt`). */
export type JoinedAt = (
  appId: string,
  channel: string,
  append: Message,
) => Promise<{ entry: Message; through: string } | undefined>

/** Compiled conflation keys kept by their text (beyond it, compiled again). */
const MAX_KEYS = 1000

/**
 * What stands between the broker and a subscriber's transport, by the channel's namespace rule
 * and the subscriber's transport params:
 * - per channel on a node, ahead of all its subscribers (the hub): server-side batching or
 *   conflation (`holdFor`, channel-hold.ts);
 * - per subscription to a channel of a `mutableMessages` namespace (`install`): the first
 *   delivery of a message joined mid-stream made whole (late-join.ts), then append rollup
 *   (append-rollup.ts).
 * Channels without such a rule get nothing in their way: no stage, no cost per delivery. A rule
 * applies to the channel's hold when the channel gains its first subscriber on the node, and to a
 * subscription when it starts.
 */
export class DeliveryStages {
  private readonly keys = new Map<string, KeyOf | undefined>()

  constructor(
    private readonly namespaces: Namespaces,
    private readonly timers: Timers,
    private readonly joinedAt: JoinedAt,
    private readonly s: StageSettings,
  ) {}

  /** The hold of a channel whose (cached) rule asks for batching or conflation; see hub.ts. */
  readonly holdFor = (appId: string, channel: string, emit: (batch: Message[]) => void): ChannelHold | undefined => {
    if (channel.includes('::$')) return undefined // chat rooms and LiveObjects: their SDKs' own deliveries
    const ns = this.namespaces.cached(appId, channel)
    const rule = ns && this.holdRule(ns)
    if (!rule) return undefined
    const bounds = { maxMessages: this.s.deliveryHoldMaxMessages, maxBytes: this.s.deliveryHoldMaxBytes }
    return new ChannelHold(channel, rule, bounds, this.timers, emit)
  }

  /**
   * Reads the rules of the session's channels (so the hub finds them cached) and puts the stages
   * they ask for in front of its sink. `resumed`: per channel, the session resumes it.
   */
  async install(session: StreamSession, resumed: boolean[]): Promise<void> {
    const appId = session.principalOf.appId
    const asked = session.stageRequest?.appendRollupWindowMs
    session.stageRequest = undefined
    const windowMs = asked ?? this.s.appendRollupWindowMs
    let makers: Array<StageMaker[] | undefined> | undefined
    for (let i = 0; i < session.channels.length; i++) {
      const channel = session.channels[i]!
      const ns = await this.namespaces.of(appId, channel)
      if (ns?.mutableMessages !== true) continue
      const list: StageMaker[] = []
      if (!resumed[i])
        list.push(
          (next) =>
            new LateJoin(
              next,
              (append) => this.joinedAt(appId, channel, append),
              () => void session.drained(),
            ),
        )
      if (windowMs > 0) {
        const bounds = { maxMessages: this.s.appendRollupMaxMessages, maxBytes: this.s.appendRollupMaxBytes }
        list.push((next) => new AppendRollup(next, windowMs, this.timers, bounds))
      }
      if (list.length) (makers ??= [])[i] = list
    }
    if (makers) {
      const all = makers
      session.interpose((sink) => new StagedSink(sink, all, resumed))
    }
  }

  private holdRule(ns: Namespace): HoldRule | undefined {
    const conflation = ns.conflationInterval
    if (ns.conflationEnabled === true && typeof conflation === 'number' && conflation > 0)
      return { intervalMs: conflation, keyOf: this.key(typeof ns.conflationKey === 'string' ? ns.conflationKey : '') }
    const batching = ns.batchingInterval
    if (ns.batchingEnabled === true && typeof batching === 'number' && batching > 0) return { intervalMs: batching }
    return undefined
  }

  /** A compiled conflation key; one that does not compile (stored before keys were checked) conflates nothing by key. */
  private key(template: string): KeyOf | undefined {
    if (this.keys.has(template)) return this.keys.get(template)
    let k: KeyOf | undefined
    try {
      k = compileKey(template)
    } catch {
      k = undefined
    }
    if (this.keys.size >= MAX_KEYS) this.keys.clear()
    this.keys.set(template, k)
    return k
  }
}

/**
 * The `appendRollupWindow` transport param (a connect query param; event streams take it too):
 * ms, brought into 0-MAX_APPEND_ROLLUP_WINDOW_MS; undefined (the default window) when absent or
 * not a number.
 */
export function appendRollupWindowParam(v: string | undefined): number | undefined {
  const n = v === undefined || v === '' ? NaN : Number(v)
  return Number.isFinite(n) ? Math.round(Math.max(0, Math.min(n, MAX_APPEND_ROLLUP_WINDOW_MS))) : undefined
}
