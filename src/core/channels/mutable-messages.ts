import { GatewayError, denied, notFound } from '../../errors'
import { utf8Length } from '../../lib/encoding'
import { KeyedQueue } from '../../lib/keyed-queue'
import { authorize, authorizeChange } from '../auth/authorize'
import type { Principal } from '../auth/principal'
import type { Namespaces } from '../control/namespaces'
import type { Limits } from '../limits/limits'
import { messageSize } from '../model/message'
import { checkChannelName } from '../model/names'
import { parseSerial } from '../model/serial'
import type { Broker } from '../ports'
import type { StatsService } from '../stats/stats-service'
import type { Message } from '../types'
import { findMessage } from './find'
import { rewoundState } from './rewind-state'
import type { VersionQuery, VersionRecord, VersionStore } from './ports'
import {
  Action,
  asUpdateEntry,
  changeEntry,
  fold,
  isWhole,
  parseChange,
  type Change,
  type ChangeAction,
} from './versions'

/** A message in its latest version, and what is recorded of it (`original`: as the log holds it, when never changed). */
export interface Found {
  message: Message
  record?: VersionRecord
  original?: Message
}

/** Where a change comes from and how refusals name the place. */
export interface ChangeContext {
  /** The realtime connection making the change. */
  connectionId?: string
  /** The place as refusals name it (default `channel "<name>"`). */
  where?: string
  /** The channel keeps its messages for the persisted window whatever its namespace says (chat rooms). */
  persisted?: boolean
}

export interface MutableSettings {
  maxMessageSize: number
  /** Most versions one message may have (the original included). */
  maxMessageVersions: number
}

/** Versions read per step while looking back for the last whole version (see `refold`). */
const REFOLD_CHUNK = 100
/** Attempts at recording a change against concurrent writers on other nodes. */
const MAX_RECORD_ATTEMPTS = 20

/** Every channel of a mutable namespace keeps its messages for the persisted window. */
const PERSISTED = { persisted: true } as const

/**
 * Message updates, deletes and appends (channels of a `mutableMessages` namespace), reads of one
 * message in its latest version and of its versions. A change is published into the channel's
 * log like a message (an entry of kind `mutation`, see versions.ts), so every transport delivers
 * it in channel order, and is then recorded in the version store: the latest version is the fold
 * of a message's changes in log (serial) order. Changes of one message are made one at a time on
 * a node; across nodes the store's compare-and-set orders them, and a change recorded after a
 * later one is folded in its place (`refold`). Chat edits and deletes are made here too
 * (`changeWith`, from core/chat/messages.ts): one version store for channels and rooms.
 */
export class MutableMessages {
  private readonly queue = new KeyedQueue()

  constructor(
    private readonly broker: Broker,
    private readonly store: VersionStore,
    private readonly namespaces: Namespaces,
    private readonly limits: Limits,
    private readonly stats: StatsService,
    private readonly s: MutableSettings,
  ) {}

  /** One message in its latest version (history capability); 404 when the channel holds none with that serial. */
  async get(p: Principal, channelName: string, serial: string): Promise<Message> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'history')
    await this.limits.take(p.accountId, 'history')
    return (await this.current(p.appId, channel, serial)).message
  }

  /** The versions of a message by version serial (history capability): the original first, going forwards. */
  async versions(p: Principal, channelName: string, serial: string, q: VersionQuery): Promise<Message[]> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'history')
    await this.limits.take(p.accountId, 'history')
    return this.versionsOf(p.appId, channel, await this.current(p.appId, channel, serial), q)
  }

  /**
   * The messages of a history page with their latest versions in place (on channels of mutable
   * namespaces; others are as published).
   */
  async withLatest(appId: string, channel: string, messages: Message[]): Promise<Message[]> {
    if (!messages.length || !(await this.namespaces.isMutable(appId, channel))) return messages
    const latest = await this.store.latest(
      appId,
      channel,
      messages.map((m) => m.serial),
    )
    return latest.size ? messages.map((m) => latest.get(m.serial) ?? m) : messages
  }

  /** What a rewind replays of `entries` (see rewind-state.ts); on other channels, the entries as they are. */
  async rewound(appId: string, channel: string, entries: Message[]): Promise<Message[]> {
    if (!entries.length || !(await this.namespaces.isMutable(appId, channel))) return entries
    return rewoundState(this.store, appId, channel, entries)
  }

  /**
   * Applies the change a wire message asks for to the message `serial` (update, delete, append);
   * answers the serial of the new version. `connectionId`: the realtime connection making it.
   */
  async change(p: Principal, channelName: string, serial: string, body: unknown, connectionId?: string) {
    const channel = checkChannelName(channelName)
    const change = parseChange(body, p)
    const op = change.action === Action.DELETE ? 'message-delete' : 'message-update'
    if (!p.capability.allows(channel, `${op}-any`) && !p.capability.allows(channel, `${op}-own`))
      throw denied(
        `Operation "${op}-any" or "${op}-own" not permitted on channel "${channel}" with the provided capability`,
      )
    if (channel.includes('::$'))
      throw denied(`Channel "${channel}" is reserved for the chat and LiveObjects interfaces`)
    if (!(await this.namespaces.isMutable(p.appId, channel)))
      throw new GatewayError(
        93002,
        `Channel "${channel}": message updates, deletes and appends need the mutableMessages rule on its namespace`,
      )
    const { version } = await this.changeWith(p, channel, serial, change.action, () => change, { connectionId })
    return version!.serial
  }

  /**
   * Makes a change of the message `serial`: `make` answers it from the message in its current
   * version (undefined: no change, the current version is the answer), or throws to refuse it.
   * Changes of one message are made one at a time on the node. Answers the message as the change
   * left it, and the change's entry (the new version). For callers that have checked the channel
   * (chat rooms, whose messages are mutable by nature): no namespace rule is asked for.
   */
  changeWith(
    p: Principal,
    channel: string,
    serial: string,
    action: ChangeAction,
    make: (cur: Message) => Omit<Change, 'action'> | undefined,
    ctx: ChangeContext = {},
  ): Promise<{ message: Message; version?: Message }> {
    return this.queue.run(`${p.appId}\u0000${channel}\u0000${serial}`, () =>
      this.apply(p, channel, serial, action, make, ctx),
    )
  }

  /** The message in its latest version and its record (when it has been changed); undefined when there is none. */
  async find(appId: string, channel: string, serial: string, persisted?: boolean): Promise<Found | undefined> {
    const record = await this.store.get(appId, channel, serial)
    if (record) return { message: record.latest, record }
    const original = await findMessage(this.broker, appId, channel, serial, {
      persisted: persisted ?? (await this.namespaces.isPersisted(appId, channel)),
    })
    return original && { message: original, original }
  }

  /**
   * A late joiner's first delivery of a message it joined mid-stream (`append` is the first change
   * of the message it receives): an update of the message's whole data in the place of `append`,
   * and the version serial its data covers (`through`: the append itself, or a later change
   * already recorded, whose appends the subscriber must then not get again). Appends of one
   * message are made one after another (each recorded before the next is published), so the
   * recorded latest version is the one before `append` or a later one. Undefined when the message
   * is no longer found.
   */
  async joinedAt(
    appId: string,
    channel: string,
    append: Message,
  ): Promise<{ entry: Message; through: string } | undefined> {
    const found = await this.find(appId, channel, append.mutation!.serial, true)
    if (!found) return undefined
    const cur = found.message
    const at = cur.version?.serial ?? cur.serial
    if (at >= append.serial) return { entry: asUpdateEntry(cur, append), through: at }
    return { entry: asUpdateEntry(fold(cur, append), append), through: append.serial }
  }

  /** Latest versions of those of `serials` that have been changed, by message serial (whatever the namespace). */
  latestOf(appId: string, channel: string, serials: string[]): Promise<Map<string, Message>> {
    return serials.length ? this.store.latest(appId, channel, serials) : Promise.resolve(new Map())
  }

  /**
   * Versions of a found message by version serial: the original, then the change entries (kind
   * `mutation`), first going forwards.
   */
  async versionsOf(appId: string, channel: string, found: Found, q: VersionQuery): Promise<Message[]> {
    const { message, record } = found
    if (record) return this.store.versions(appId, channel, message.serial, q)
    const after =
      q.cursor === undefined || (q.direction === 'forwards' ? message.serial > q.cursor : message.serial < q.cursor)
    return after ? [message] : []
  }

  private async apply(
    p: Principal,
    channel: string,
    serial: string,
    action: ChangeAction,
    make: (cur: Message) => Omit<Change, 'action'> | undefined,
    ctx: ChangeContext,
  ): Promise<{ message: Message; version?: Message }> {
    const { message: cur, original, record } = await this.current(p.appId, channel, serial, ctx.persisted)
    authorizeChange(p, channel, action === Action.DELETE ? 'message-delete' : 'message-update', cur.clientId, ctx.where)
    const made = make(cur)
    if (!made) return { message: cur }
    const change: Change = { ...made, action }
    if (record && record.count >= this.s.maxMessageVersions)
      throw new GatewayError(
        40000,
        `Message "${serial}" has ${record.count} versions, the most a message may have (${this.s.maxMessageVersions})`,
      )
    const draft = changeEntry(cur, change, ctx.connectionId)
    const size = messageSize(fold(cur, { ...draft, serial: '', timestamp: 0 })) + operationBytes(change)
    if (size > this.s.maxMessageSize)
      throw new GatewayError(
        40009,
        `Maximum message length exceeded (size was ${size} bytes, limit is ${this.s.maxMessageSize} bytes)`,
      )
    if (this.limits.channelRated) await this.limits.takeChannel(p.appId, channel, 1)
    const charge = this.limits.enabled ? await this.limits.charge(p.accountId, 'messages') : undefined
    const res = await this.broker.publish(p.appId, channel, [{ ...draft }], { ...PERSISTED, charge })
    if (charge) this.limits.settle(charge, res.charged!)
    const versionSerial = res.serials[0]!
    this.stats.messagesPublished(p.appId, p.accountId, 1, messageSize(draft), true)
    const version: Message = { ...draft, serial: versionSerial, timestamp: parseSerial(versionSerial)!.ms }
    await this.record(p.appId, channel, original ?? cur, record, version)
    return { message: fold(cur, version), version }
  }

  /**
   * The message in its latest version (`record` when it has been changed; `original` when not,
   * as the log holds it); 404 when there is none.
   */
  private async current(appId: string, channel: string, serial: string, persisted?: boolean): Promise<Found> {
    const found = await this.find(appId, channel, serial, persisted)
    if (!found) throw notFound(`Message "${serial}" not found on channel "${channel}"`)
    return found
  }

  /**
   * Records a published change and the latest version it makes. Another node may record a change
   * of the same message meanwhile: the compare-and-set then fails and the change is recorded
   * against what that node left, folded in serial order.
   */
  private async record(
    appId: string,
    channel: string,
    original: Message,
    record: VersionRecord | undefined,
    v: Message,
  ): Promise<void> {
    for (let attempt = 0; attempt < MAX_RECORD_ATTEMPTS; attempt++) {
      const latest =
        !record || v.serial > record.latest.version!.serial
          ? fold(record?.latest ?? original, v)
          : await this.refold(appId, channel, v, record.latest)
      const expected = record?.count ?? 0
      if (await this.store.put(appId, channel, { original, expected, version: v, latest })) return
      record = await this.store.get(appId, channel, v.mutation!.serial)
    }
    throw new GatewayError(
      50003,
      'The change was published but not recorded (too many concurrent changes of the message); its outcome is unknown',
    )
  }

  /**
   * The latest version with `v` (a change not yet recorded, older than the newest recorded one) in
   * its place: folded from the newest whole version (the original, an update or a delete) onwards,
   * in serial order. `known` is any version of the message (for what all versions share).
   */
  private async refold(appId: string, channel: string, v: Message, known: Message): Promise<Message> {
    const later: Message[] = [] // after the base, newest first
    let base: Message | undefined
    let pending: Message | undefined = v
    const take = (m: Message) => {
      if (isWhole(m)) base = m
      else later.push(m)
    }
    for (let cursor: string | undefined; base === undefined;) {
      const page = await this.store.versions(appId, channel, v.mutation!.serial, {
        cursor,
        limit: REFOLD_CHUNK,
        direction: 'backwards',
      })
      for (const m of page) {
        if (pending && pending.serial > m.serial) {
          take(pending)
          pending = undefined
          if (base) break
        }
        take(m)
        if (base) break
      }
      if (page.length < REFOLD_CHUNK) break
      cursor = page[page.length - 1]!.serial
    }
    if (pending && !base) take(pending)
    // the original is recorded with the first change, so a whole version is always found
    if (!base) throw new GatewayError(50000, 'The versions of the message are incomplete')
    let state: Message = base.kind === 'mutation' ? fold(known, base) : base
    for (let i = later.length - 1; i >= 0; i--) state = fold(state, later[i]!)
    return state
  }
}

/** What an operation's own description and metadata add to the message size (they are stored with the version). */
const operationBytes = (c: Change): number =>
  (c.op.description === undefined ? 0 : utf8Length(c.op.description)) +
  (c.op.metadata === undefined ? 0 : utf8Length(JSON.stringify(c.op.metadata)))
