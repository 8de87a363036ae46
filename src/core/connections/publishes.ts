import type { ConnectionServices } from './services'
import type { Principal } from '../auth/principal'
import type { Answer, PublishResponse } from '../channels/publisher'
import { asGatewayError, GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import type { AckQueue, AckSlot } from './acks'
import { Flag, loggedName, modeRefused, wireError, type ProtocolMessage } from './protocol'
import { dropsRefusals } from '../../core/model/sub-channels'

/** Protocol messages a connection may have in flight unanswered before further ones are refused. */
const MAX_PENDING = 10_000
/**
 * Lookups in the log a connection resumed without its publish memory makes (one per channel and
 * event-loop turn: on Redis, a scan of the channel's stream); past them, publishes are not looked up.
 */
const MAX_LOOKUPS = 100
/** Messages one lookup asks for at most (a resend of a full publish fits): more start another lookup. */
const MAX_LOOKUP_MESSAGES = 1000

/** Resends of one channel looked up together, and their answers in the same order. */
interface Lookup {
  resends: Array<{ msgSerial: number; count: number }>
  messages: number
  answers: Promise<Array<string[] | undefined>>
}

/** What publishing needs of its connection. */
export interface PublishHost {
  readonly id: string
  readonly core: ConnectionServices
  readonly principalOf: Principal
  readonly acks: AckQueue
  /** The ATTACH of the channel still under way on this connection, if any. */
  pendingAttach(channel: string): Promise<void> | undefined
  /** The modes granted to the channel's attachment; undefined when not attached. */
  attachedModes(channel: string): number | undefined
  /** Fails the connection (a protocol message that cannot be answered). */
  fail(err: GatewayError): void
  readonly log: Logger
}

/**
 * The publishes of one realtime connection: MESSAGE (no attach needed: transient publishing)
 * answered once the broker has it, in the order protocol messages arrived; a resend after a
 * resume answered with its first outcome instead of being published again.
 */
export class Publishes {
  /**
   * Until then (ms), publishes are looked up in the channel's log before they are appended: the
   * connection resumed here without what its earlier node knew of its publishes (that node died),
   * and the client resends the ones it holds unanswered first thing.
   */
  unknownPastUntil = 0
  private lookupsLeft = MAX_LOOKUPS
  /** The lookup of each channel gathering the resends of this turn. */
  private lookups?: Map<string, Lookup>

  constructor(private readonly host: PublishHost) {}

  /** Whether a publish is looked up in the log first (no clock read on a connection that never resumed so). */
  private get pastUnknown(): boolean {
    return this.unknownPastUntil !== 0 && this.unknownPastUntil > this.host.core.clock.now()
  }

  /** A protocol message needing an answer: its slot, or the connection fails (it can't be answered). */
  slotFor(pm: ProtocolMessage, publish = false): AckSlot | undefined {
    const msgSerial = pm.msgSerial
    if (typeof msgSerial !== 'number' || !Number.isInteger(msgSerial) || msgSerial < 0) {
      this.host.fail(new GatewayError(40000, 'Invalid protocol message: msgSerial must be a non-negative integer'))
      return undefined
    }
    return this.host.acks.open(msgSerial, publish)
  }

  /** A protocol message this gateway does not serve, answered with a NACK. */
  refuse(pm: ProtocolMessage, err: GatewayError): void {
    const slot = this.slotFor(pm)
    if (slot) this.host.acks.nack(slot, err.toBody())
  }

  publish(pm: ProtocolMessage): void {
    const slot = this.slotFor(pm, true)
    if (!slot) return
    const { acks } = this.host
    // resent after a resume: answered with the first outcome (waited for when still in the broker), not published again
    const earlier = acks.earlier(slot.msgSerial)
    if (Array.isArray(earlier)) return acks.ack(slot, earlier)
    if (earlier) return void earlier.then((s) => (s.error ? acks.nack(slot, s.error) : acks.ack(slot, s.serials!)))
    if (acks.pending > MAX_PENDING)
      return acks.nack(slot, new GatewayError(42910, 'Too many publishes awaiting acknowledgement').toBody())
    const channel = typeof pm.channel === 'string' ? pm.channel : ''
    const attaching = this.host.pendingAttach(channel)
    if (attaching || this.pastUnknown) return void this.publishAfter(slot, channel, pm.messages, attaching)
    // the common case: answered at once on an embedded node, else after one promise reaction
    let answer: Answer<PublishResponse>
    try {
      this.checkMode(channel)
      answer = this.host.core.publisher.publish(this.host.principalOf, channel, pm.messages, {
        connectionId: this.host.id,
        msgSerial: slot.msgSerial,
      })
    } catch (e) {
      return this.refused(slot, channel, e)
    }
    if (answer instanceof Promise)
      answer.then(
        (r) => acks.ack(slot, r.serials),
        (e) => this.refused(slot, channel, e),
      )
    else acks.ack(slot, answer.serials)
  }

  /** A publish that failed, answered with a NACK (logged at debug with its reason). */
  private refused(slot: AckSlot, channel: string, e: unknown) {
    const err = asGatewayError(e)
    this.host.log.debug('realtime publish refused', {
      connectionId: this.host.id,
      channel: loggedName(channel),
      msgSerial: slot.msgSerial,
      code: err.code,
      error: err.message,
    })
    if (dropsRefusals(channel)) return this.host.acks.ack(slot, [null])
    this.host.acks.nack(slot, wireError(err))
  }

  /** A channel attached without the PUBLISH mode refuses publishes (a channel not attached takes them). */
  private checkMode(channel: string) {
    const modes = this.host.attachedModes(channel)
    if (modes !== undefined && !(modes & Flag.PUBLISH)) throw modeRefused(channel, 'publish')
  }

  /**
   * A publish after the channel's ATTACH under way, or looked up in the channel's log first
   * (resumed from a node that did not hand its memory over: it died, a resend may be in the log).
   */
  private async publishAfter(slot: AckSlot, channel: string, messages: unknown, attaching?: Promise<void>) {
    const { acks, core, principalOf } = this.host
    const ctx = { connectionId: this.host.id, msgSerial: slot.msgSerial }
    try {
      if (attaching) await attaching
      this.checkMode(channel)
      const before = this.pastUnknown
        ? await this.inLog(channel, slot.msgSerial, Array.isArray(messages) ? messages.length : 1)
        : undefined
      acks.ack(slot, before ?? (await core.publisher.publish(principalOf, channel, messages, ctx)).serials)
    } catch (e) {
      this.refused(slot, channel, e)
    }
  }

  /**
   * The serials a protocol message has in the channel's log when all its messages are there (a
   * resend), else undefined. The client resends what it held unanswered at once, so the resends
   * of one channel that arrive in one turn are looked up together.
   */
  private inLog(channel: string, msgSerial: number, count: number): Promise<string[] | undefined> {
    let lookup = this.lookups?.get(channel)
    if (!lookup || lookup.messages + count > MAX_LOOKUP_MESSAGES) {
      if (this.lookupsLeft <= 0) return Promise.resolve(undefined)
      this.lookupsLeft--
      const resends: Lookup['resends'] = []
      const made: Lookup = {
        resends,
        messages: 0,
        // made once this turn's frames are in: the resends the client sent together go together
        answers: new Promise<void>((next) => this.host.core.timers.soon(next)).then(() => {
          if (this.lookups!.get(channel) === made) this.lookups!.delete(channel)
          return this.host.core.channels.publishedBefore(this.host.principalOf, channel, this.host.id, resends)
        }),
      }
      ;(this.lookups ??= new Map()).set(channel, (lookup = made))
    }
    lookup.messages += count
    const i = lookup.resends.push({ msgSerial, count }) - 1
    return lookup.answers.then(
      (a) => a[i],
      () => undefined,
    )
  }
}
