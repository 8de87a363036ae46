import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import type { Limits } from '../limits/limits'
import { batchEntryError, summarize } from '../model/batch'
import type { PresenceService } from '../presence/presence-service'
import type { BatchResult, PresenceMessage } from '../types'
import { MAX_BATCH_MESSAGES, type Publisher, type PublishResponse } from './publisher'

export const MAX_BATCH_CHANNELS = 100
export const MAX_BATCH_PRESENCE_CHANNELS = 100

/** Requests over several channels at once (REST `/messages`, `/presence`): one result per channel. */
export class Batches {
  constructor(
    private readonly publisher: Publisher,
    private readonly presenceOf: PresenceService,
    private readonly limits: Limits,
  ) {}

  /** Batch publish: one BatchResult per spec; failures of one channel never fail the others. */
  async publish(p: Principal, body: unknown): Promise<BatchResult<PublishResponse>[]> {
    const specs = Array.isArray(body) ? body : [body]
    if (specs.length === 0) throw new GatewayError(40001, 'Invalid batch request: no specs')
    const normalized = specs.map((spec) => {
      if (!spec || typeof spec !== 'object' || Array.isArray(spec))
        throw new GatewayError(40001, 'Invalid batch spec: must be an object with channels and messages')
      const { channels, messages } = spec as { channels?: unknown; messages?: unknown }
      const chs = typeof channels === 'string' ? [channels] : channels
      if (!Array.isArray(chs) || chs.length === 0 || !chs.every((c) => typeof c === 'string'))
        throw new GatewayError(40001, 'Invalid batch spec: channels must be a string or a non-empty array of strings')
      if (chs.length > MAX_BATCH_CHANNELS)
        throw new GatewayError(40001, `Invalid batch spec: more than ${MAX_BATCH_CHANNELS} channels`)
      if (messages === undefined || messages === null)
        throw new GatewayError(40001, 'Invalid batch spec: messages missing')
      const msgs = Array.isArray(messages) ? messages : [messages]
      if (msgs.length === 0 || msgs.length > MAX_BATCH_MESSAGES)
        throw new GatewayError(40001, `Invalid batch spec: 1 to ${MAX_BATCH_MESSAGES} messages`)
      return { channels: chs as string[], messages: msgs }
    })
    // the whole batch is charged at once: over the remaining budget it is refused whole
    let total = 0
    for (const spec of normalized) total += spec.channels.length * spec.messages.length
    await this.limits.take(p.accountId, 'messages', total)
    const out: BatchResult<PublishResponse>[] = []
    for (const spec of normalized) {
      const results = await Promise.all(
        spec.channels.map((channel) =>
          Promise.resolve()
            .then(() => this.publisher.append(p, this.publisher.prepare(p, channel, spec.messages), true))
            .catch((e) => ({ channel, error: batchEntryError(e) })),
        ),
      )
      out.push(summarize(results))
    }
    return out
  }

  /** Batch presence: the members present on each channel; a channel refused fails alone. */
  async presence(
    p: Principal,
    channels: string[],
  ): Promise<BatchResult<{ channel: string; presence: PresenceMessage[] }>> {
    if (channels.length > MAX_BATCH_PRESENCE_CHANNELS)
      throw new GatewayError(40003, `More than ${MAX_BATCH_PRESENCE_CHANNELS} channels`)
    type Item = { channel: string; presence: PresenceMessage[] }
    const results = await Promise.all(
      channels.map((channel) =>
        this.presenceOf.members(p, channel, { limit: 1000 }).then(
          (presence): Item => ({ channel, presence }),
          (e) => ({ channel, error: batchEntryError(e) }),
        ),
      ),
    )
    return summarize<Item>(results)
  }
}
