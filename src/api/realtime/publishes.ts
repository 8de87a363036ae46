import type { Core } from '../../core'
import type { Principal } from '../../core/auth/principal'
import { GatewayError } from '../../errors'
import { toGatewayError } from '../plugins/errors'
import type { AckQueue, AckSlot } from './acks'
import { wireError, type ProtocolMessage } from './protocol'

/** Protocol messages a connection may have in flight unanswered before further ones are refused. */
const MAX_PENDING = 10_000

/** What publishing needs of its connection. */
export interface PublishHost {
  readonly id: string
  readonly core: Core
  readonly principalOf: Principal
  readonly acks: AckQueue
  /** The ATTACH of the channel still under way on this connection, if any. */
  pendingAttach(channel: string): Promise<void> | undefined
  /** Fails the connection (a protocol message that cannot be answered). */
  fail(err: GatewayError): void
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

  constructor(private readonly host: PublishHost) {}

  /** A protocol message needing an answer: its slot, or the connection fails (it can't be answered). */
  slotFor(pm: ProtocolMessage): AckSlot | undefined {
    const msgSerial = pm.msgSerial
    if (typeof msgSerial !== 'number' || !Number.isInteger(msgSerial) || msgSerial < 0) {
      this.host.fail(new GatewayError(40000, 'Invalid protocol message: msgSerial must be a non-negative integer'))
      return undefined
    }
    return this.host.acks.open(msgSerial)
  }

  /** A protocol message this gateway does not serve, answered with a NACK. */
  refuse(pm: ProtocolMessage, err: GatewayError): void {
    const slot = this.slotFor(pm)
    if (slot) this.host.acks.nack(slot, err.toBody())
  }

  publish(pm: ProtocolMessage): void {
    const { acks, core } = this.host
    const slot = this.slotFor(pm)
    if (!slot) return
    const nack = (e: unknown) => acks.nack(slot, wireError(toGatewayError('UNKNOWN', e)))
    // resent after a resume: answered with the first outcome (waited for when still in the broker), not published again
    const earlier = acks.earlier(slot.msgSerial)
    if (Array.isArray(earlier)) return acks.ack(slot, earlier)
    if (earlier) return void earlier.then((serials) => acks.ack(slot, serials), nack)
    if (acks.pending > MAX_PENDING)
      return acks.nack(slot, new GatewayError(42910, 'Too many publishes awaiting acknowledgement').toBody())
    const channel = typeof pm.channel === 'string' ? pm.channel : ''
    const ctx = { connectionId: this.host.id, msgSerial: slot.msgSerial }
    const publishNow = () =>
      core.channels.publish(this.host.principalOf, channel, pm.messages, ctx).then((r) => r.serials)
    // resumed from a node that did not hand its memory over (it died): a resend may already be in the log
    const publish =
      Date.now() < this.unknownPastUntil
        ? async () =>
            (await core.channels
              .publishedBefore(this.host.principalOf, channel, ctx, Array.isArray(pm.messages) ? pm.messages.length : 1)
              .catch(() => undefined)) ?? publishNow()
        : publishNow
    const attaching = this.host.pendingAttach(channel)
    const outcome = attaching ? attaching.then(publish) : publish()
    acks.track(slot.msgSerial, outcome)
    outcome.then((serials) => acks.ack(slot, serials), nack)
  }
}
