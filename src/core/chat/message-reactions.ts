import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import type { Clock } from '../ports'
import type { Limits } from '../limits/limits'
import { callerClientId, type ChatMessages } from './messages'
import { MAX_REACTION_RECORDS, TooManyReactions, type ChatStore, type ReactionKind, type ReactionRecord } from './ports'
import {
  checkReactionMetadata,
  sorted,
  summarize,
  summarizeByName,
  type NameSummary,
  type ReactionSummary,
} from './reactions'
import type { RoomEvents } from './room-events'
import { CHAT_EVENTS, authorizeRoom, checkRoomId, roomChannel } from './rooms'
import type { AnnotationService } from '../channels/annotation-service'
import { userClaimFor } from '../auth/user-claims'

export interface ReactionInput {
  kind: ReactionKind
  name: string
  count: number
  metadata?: Record<string, unknown>
  /** Acting for this client (checked against the credentials); default: the credentials' own. */
  clientId?: unknown
}

export interface ReactionResult {
  /** Serial of the reaction event on the room channel. */
  serial: string
  messageSerial: string
  reaction: ReactionRecord
  summary: ReactionSummary
  /** Per reaction name: total count and the clients. */
  byName: NameSummary
}

export interface ReactionList {
  messageSerial: string
  items: ReactionRecord[]
  /** Per reaction name: total count and the clients. */
  summary: NameSummary
  /** Per kind, as the hosted service summarises them. */
  reactions: ReactionSummary
}

/** Reactions to messages: add, remove, list. Every change is an event on the room channel. */
export class MessageReactions {
  constructor(
    private readonly events: RoomEvents,
    private readonly store: ChatStore,
    private readonly messages: ChatMessages,
    private readonly annotations: AnnotationService,
    private readonly limits: Limits,
    private readonly clock: Clock,
  ) {}

  add(p: Principal, roomId: string, serial: string, input: ReactionInput): Promise<ReactionResult> {
    return this.change(p, roomId, serial, input, false)
  }

  /** Removes the client's reaction (for unique, whatever its name). */
  remove(
    p: Principal,
    roomId: string,
    serial: string,
    input: Omit<ReactionInput, 'count' | 'metadata'>,
  ): Promise<ReactionResult> {
    return this.change(p, roomId, serial, { ...input, count: 1 }, true)
  }

  private async change(
    p: Principal,
    roomId: string,
    serial: string,
    input: ReactionInput,
    remove: boolean,
  ): Promise<ReactionResult> {
    const room = checkRoomId(roomId)
    authorizeRoom(p, room, 'annotation-publish', 'publish')
    const clientId = callerClientId(p, input.clientId)
    if (clientId === undefined)
      throw new GatewayError(
        40012,
        'Reactions need an identified client: use credentials with a clientId or give clientId',
      )
    const metadata = checkReactionMetadata(input.metadata)
    const message = await this.messages.get(p, room, serial, false)
    if (message.action === 'message.delete') throw new GatewayError(40000, `Message "${serial}" has been deleted`)
    await this.limits.take(p.accountId, 'messages')
    const record: ReactionRecord = {
      kind: input.kind,
      name: input.name,
      clientId,
      count: input.count,
      timestamp: this.clock.now(),
    }
    if (metadata !== undefined) record.metadata = metadata
    let after: ReactionRecord[]
    try {
      after = (await this.store.react(p.appId, room, serial, { ...record, remove }, MAX_REACTION_RECORDS)).reactions
    } catch (e) {
      if (e instanceof TooManyReactions)
        throw new GatewayError(40000, `Message "${serial}" has the most reactions allowed (${MAX_REACTION_RECORDS})`)
      throw e
    }
    // every subscriber of the room gets the summary with the event: within the summary bound
    const summary = this.annotations.clip(summarize(after))
    const type = remove ? CHAT_EVENTS.reactionDelete : CHAT_EVENTS.reactionCreate
    const reaction: Record<string, unknown> = { type: record.kind, name: record.name, clientId }
    if (record.kind === 'multiple' && !remove) reaction.count = record.count
    if (record.metadata !== undefined) reaction.metadata = record.metadata
    const { serial: eventSerial } = await this.events.publish(p, room, {
      name: type,
      clientId,
      encoding: 'json',
      data: JSON.stringify({ type, messageSerial: serial, reaction, summary }),
    })
    await this.deliver(p, room, serial, record, remove)
    return { serial: eventSerial, messageSerial: serial, reaction: record, summary, byName: summarizeByName(after) }
  }

  /**
   * The change as the chat client receives it: an annotation of type `reaction:<kind>.v1` (to
   * attachments with the annotation-subscribe mode) and the message's summary after it (to every
   * subscriber), as the hosted service sends them.
   */
  private async deliver(p: Principal, room: string, serial: string, r: ReactionRecord, remove: boolean) {
    const channel = roomChannel(room)
    const a: Parameters<AnnotationService['announce']>[2] = {
      action: remove ? 1 : 0,
      type: `reaction:${r.kind}.v1`,
      messageSerial: serial,
      clientId: r.clientId,
    }
    if (!(remove && r.kind === 'unique')) a.name = r.name
    if (r.kind === 'multiple' && !remove) a.count = r.count
    const claim = userClaimFor(p, room)
    if (claim !== undefined) a.extras = { userClaim: claim }
    await this.annotations.announce(p.appId, channel, a)
    void this.annotations.summarizeCurrent(p.appId, channel, serial, async () => {
      const now = summarize((await this.store.states(p.appId, room, [serial])).get(serial)?.reactions ?? [])
      return {
        'reaction:unique.v1': now.unique,
        'reaction:distinct.v1': now.distinct,
        'reaction:multiple.v1': now.multiple,
      }
    })
  }

  /** Every reaction of a message, with both summaries; `forClientId` trims the client lists to one client. */
  async list(p: Principal, roomId: string, serial: string, forClientId?: string): Promise<ReactionList> {
    const room = checkRoomId(roomId)
    authorizeRoom(p, room, 'history', 'annotation-subscribe')
    await this.limits.take(p.accountId, 'history')
    await this.messages.original(p.appId, room, serial)
    const items = sorted((await this.store.states(p.appId, room, [serial])).get(serial)?.reactions ?? [])
    return { messageSerial: serial, items, summary: summarizeByName(items), reactions: summarize(items, forClientId) }
  }
}
