import type { Principal } from '../auth/principal'
import { checkChannelName } from '../model/names'
import { isFiltered, parseFilteredChannel } from '../channels/filtered-channel'
import { asGatewayError, GatewayError } from '../../errors'
import { Attachment, occupancyRole } from './attachment'
import {
  Action,
  Flag,
  grantedModes,
  loggedName,
  requestedModes,
  SENDING_MODES,
  wireError,
  type ProtocolMessage,
} from './protocol'
import type { PresenceOps } from './presence-ops'
import { parseRewind } from './rewind'
import { wantsOccupancy } from './occupancy-message'
import type { ConnectionHost } from './host'
import { sendObjectSync } from './object-ops'
import { DeltaStage } from '../fanout/delta-stage'

/**
 * Channel params the server recognises, echoed in ATTACHED as sent (others are dropped, as the
 * hosted service does): `rewind`, `modes` (which overrides the mode flags), and `delta`, echoed
 * only when honoured (`vcdiff`, the one format there is; another value is dropped and full
 * payloads are sent).
 */
const RECOGNISED_PARAMS = new Set(['rewind', 'modes', 'delta'])
const DELTA_FORMAT = 'vcdiff'

/**
 * The attachments of one connection. Operations on one channel run one after another (an
 * ATTACH followed at once by a DETACH ends detached); different channels proceed independently.
 */
export class ChannelOps {
  private readonly attachments = new Map<string, Attachment>()
  /** Channels whose ATTACH is under way (not yet in `attachments`). */
  private attaching?: Set<string>
  /** Each channel's operations still running, chained (none on an idle connection). */
  private queues?: Map<string, Promise<void>>

  constructor(
    private readonly conn: ConnectionHost,
    private readonly presence: PresenceOps,
  ) {}

  get size(): number {
    return this.attachments.size
  }

  /**
   * Settles once the operations received so far on `channel` are done; undefined when none is
   * pending. A publish waits for it: an ATTACH sent before it has fixed its start by then, so the
   * connection receives what it publishes next (a connection's protocol messages act in order).
   */
  pending(channel: unknown): Promise<void> | undefined {
    return typeof channel === 'string' ? this.queues?.get(channel) : undefined
  }

  attach(pm: ProtocolMessage): void {
    this.onChannel(pm, (channel) => this.doAttach(channel, pm))
  }

  detach(pm: ProtocolMessage): void {
    this.onChannel(pm, async (channel) => {
      this.attachments.get(channel)?.close()
      this.attachments.delete(channel)
      await this.presence.detached(channel) // leaving a channel leaves its presence (with the members' leaves first)
      this.conn.send({ action: Action.DETACHED, channel })
      this.conn.log.debug('realtime detached', { connectionId: this.conn.id, channel })
    })
  }

  /**
   * The modes granted to the channel's attachment; undefined when the channel is not attached
   * (publishing without attaching is allowed, within the capability).
   */
  modesOf(channel: string): number | undefined {
    return this.attachments.get(channel)?.modes
  }

  /** SYNC asked for by the client: the members again, if it receives presence on the channel. */
  sync(pm: ProtocolMessage): void {
    this.onChannel(pm, async (channel) => {
      const att = this.attachments.get(channel)
      if (att && att.modes & Flag.PRESENCE_SUBSCRIBE) await this.presence.sync(channel)
    })
  }

  /**
   * Runs `op` after the channel's earlier operations; a failure becomes a channel ERROR (that
   * channel fails). A frame naming no channel fails the connection as a malformed frame does
   * (40000): a channel ERROR must carry a channel field, and one without reads as the
   * connection's (an empty name is a name: its ERROR carries `channel: ""`, which the clients take
   * as that channel's, RTL4d).
   */
  private onChannel(pm: ProtocolMessage, op: (channel: string) => Promise<void>) {
    if (typeof pm.channel !== 'string')
      return this.conn.fail(new GatewayError(40000, `Invalid protocol message: action ${pm.action} needs a channel`))
    const name = pm.channel
    let channel: string
    try {
      channel = isFiltered(name) ? (parseFilteredChannel(name), name) : checkChannelName(name)
    } catch (e) {
      return this.channelError(name, asGatewayError(e), pm.action)
    }
    this.inOrder(channel, () =>
      op(channel).catch((e) => {
        this.attachments.get(channel)?.close()
        this.attachments.delete(channel)
        this.channelError(channel, asGatewayError(e), pm.action)
      }),
    )
  }

  /**
   * Runs `op` after the channel's earlier operations (ATTACH, DETACH, SYNC, PRESENCE); later ones
   * wait for it. `op` settles its own failures: it never rejects.
   */
  inOrder(channel: string, op: () => Promise<void>): void {
    const run = (this.queues?.get(channel) ?? Promise.resolve()).then(op)
    ;(this.queues ??= new Map()).set(channel, run)
    void run.then(() => {
      if (this.queues?.get(channel) === run) this.queues.delete(channel)
    })
  }

  /** A channel ERROR (that channel fails; the connection goes on), logged at info with its reason. */
  private channelError(channel: string, err: GatewayError, action?: number) {
    this.conn.send({ action: Action.ERROR, channel, error: wireError(err) })
    this.conn.log.info(action === Action.ATTACH ? 'realtime attach refused' : 'realtime channel failed', {
      connectionId: this.conn.id,
      channel: loggedName(channel),
      code: err.code,
      statusCode: err.statusCode,
      error: err.message,
    })
  }

  private async doAttach(channel: string, pm: ProtocolMessage) {
    const { s } = this.conn
    const existing = this.attachments.get(channel)
    if (existing) {
      existing.close()
      this.attachments.delete(channel)
    } else if (this.attachments.size + (this.attaching?.size ?? 0) >= s.realtimeMaxChannels) {
      throw new GatewayError(90021, `Too many channels on this connection (at most ${s.realtimeMaxChannels})`)
    }
    // channels attach concurrently: this one holds its place while it awaits the backend
    const attaching = (this.attaching ??= new Set())
    attaching.add(channel)
    try {
      await this.attachNew(channel, pm)
    } finally {
      attaching.delete(channel)
    }
  }

  private async attachNew(wireName: string, pm: ProtocolMessage) {
    const { core } = this.conn
    const principal = this.conn.principalOf
    // a filtered channel (`[filter=...]name`): the channel `name`, its messages filtered on delivery
    const derived = isFiltered(wireName) ? parseFilteredChannel(wireName) : undefined
    const channel = derived?.base ?? wireName
    const params = { ...derived?.params, ...(typeof pm.params === 'object' && pm.params !== null ? pm.params : {}) }
    const requested = requestedModes(pm.flags, params)
    const modes = grantedModes(principal.capability, channel, requested)
    if (!modes) throw new GatewayError(40160, `No capability on channel "${channel}" for any of the requested modes`)
    const serial = typeof pm.channelSerial === 'string' && pm.channelSerial ? pm.channelSerial : undefined
    // an attach that resumes (ATTACH_RESUME, or a channelSerial: the client was attached before)
    // replays nothing by `rewind`: what it saw is not sent again (the param is still checked)
    const resuming = serial !== undefined || (typeof pm.flags === 'number' && (pm.flags & Flag.ATTACH_RESUME) !== 0)
    const parsed = params.rewind === undefined ? undefined : parseRewind(String(params.rewind))
    const rewind = resuming ? undefined : parsed
    const echoed: Record<string, string> = {}
    for (const [k, v] of Object.entries(params)) if (RECOGNISED_PARAMS.has(k)) echoed[k] = String(v)
    if (echoed.delta !== undefined && echoed.delta !== DELTA_FORMAT) delete echoed.delta
    // occupancy events need channel-metadata; without it the attach goes on, without events
    const occupancy = wantsOccupancy(params) && principal.capability.allows(channel, 'channel-metadata')
    if (occupancy) echoed.occupancy = 'metrics'

    let flags = 0
    let error: GatewayError | undefined
    let positions: string[] | undefined
    if (serial !== undefined) {
      if (await core.streams.canResume(principal.appId, channel, serial)) {
        flags |= Flag.RESUMED
        positions = [serial]
      } else {
        error = new GatewayError(90003, 'Unable to recover channel (messages expired)')
      }
    }
    // a fresh attacher that receives presence gets the members (SYNC after ATTACHED); a resumed one has them
    const members =
      modes & Flag.PRESENCE_SUBSCRIBE && !(flags & Flag.RESUMED)
        ? await core.presence.snapshot(principal.appId, channel)
        : []
    if (members.length) flags |= Flag.HAS_PRESENCE
    if (modes & Flag.OBJECT_SUBSCRIBE) flags |= Flag.HAS_OBJECTS // always followed by a full OBJECT_SYNC
    const att = new Attachment(
      this.conn,
      wireName,
      modes,
      flags,
      Object.keys(echoed).length ? echoed : undefined,
      error,
    )
    att.base = channel
    att.requested = requested
    // deltas (fanout/delta-stage.ts): a stage of this attachment's own, from its first message
    if (echoed.delta && modes & Flag.SUBSCRIBE)
      att.deltas = new DeltaStage(this.conn.s.deltaMaxBytes, this.conn.echo ? undefined : this.conn.id)
    this.attachments.set(wireName, att)
    att.role = occupancyRole(modes)
    att.appId = principal.appId
    core.occupancy.attach(principal.appId, channel, att.role)
    if (modes & (Flag.SUBSCRIBE | Flag.PRESENCE_SUBSCRIBE | Flag.OBJECT_SUBSCRIBE | Flag.ANNOTATION_SUBSCRIBE)) {
      att.session = core.streams.create(
        {
          principal,
          channels: [channel],
          positions,
          rewind: rewind?.count,
          rewindMs: rewind?.ms,
          managed: true,
          // receiving only object operations (LiveObjects) needs object-subscribe, not subscribe
          operation: modes & (Flag.SUBSCRIBE | Flag.PRESENCE_SUBSCRIBE) ? undefined : 'object-subscribe',
          filter: derived?.filter,
          held:
            modes & (Flag.SUBSCRIBE | Flag.ANNOTATION_SUBSCRIBE)
              ? {
                  summaries: (modes & Flag.SUBSCRIBE) !== 0,
                  annotations: (modes & Flag.ANNOTATION_SUBSCRIBE) !== 0,
                  exceptConnection: this.conn.echo ? undefined : this.conn.id,
                }
              : undefined,
          appendRollupWindowMs: this.conn.appendRollupWindowMs,
        },
        att,
      )
      await core.streams.start(att.session)
    } else {
      att.sendAttached(await core.streams.position(principal.appId, channel))
    }
    if (this.conn.log.enabled('debug'))
      this.conn.log.debug('realtime attached', {
        connectionId: this.conn.id,
        channel: loggedName(wireName),
        modes,
        resumed: (flags & Flag.RESUMED) !== 0,
        ...(Object.keys(echoed).length ? { params: echoed } : {}),
      })
    if (members.length) await this.presence.sync(wireName, members)
    if (modes & Flag.OBJECT_SUBSCRIBE) {
      // LiveObjects (object-ops.ts): a full sync after every ATTACHED
      att.reattached = () =>
        void sendObjectSync(this.conn, channel, wireName).catch((e) => this.conn.fail(asGatewayError(e)))
      await sendObjectSync(this.conn, channel, wireName)
    }
    if (occupancy && this.attachments.get(wireName) === att)
      att.unwatch = core.occupancyEvents.watch(principal.appId, channel, att)
  }

  /**
   * New credentials: an attachment the capability no longer allows all it delivers fails (40160);
   * the others carry on under them, their sending modes (publish, presence...) widened or narrowed
   * to what the new capability grants of what the ATTACH asked for.
   */
  reauthorized(principal: Principal): void {
    for (const [channel, att] of this.attachments) {
      const granted = grantedModes(principal.capability, att.base ?? channel, att.requested)
      const kept = (att.modes & ~SENDING_MODES) | (granted & SENDING_MODES)
      if ((granted & kept) !== kept || !kept) {
        att.close()
        this.attachments.delete(channel)
        this.channelError(
          channel,
          new GatewayError(40160, `The new credentials no longer permit the modes attached on "${channel}"`),
        )
      } else {
        att.regrant(kept)
        att.session?.renew(principal)
      }
    }
  }

  /** A subscription of `att` ended with an error of its channel alone (a filter refused for its cost): that channel fails. */
  failed(att: Attachment, err: GatewayError): void {
    if (this.attachments.get(att.channel) !== att) return
    this.attachments.delete(att.channel)
    this.channelError(att.channel, err)
  }

  drained(): void {
    for (const att of this.attachments.values()) void att.session?.drained()
  }

  closeAll(): void {
    for (const att of this.attachments.values()) att.close()
    this.attachments.clear()
  }
}
