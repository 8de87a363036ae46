import type { Answer } from '../channels/publisher'
import { takeTokens, type Bucket } from '../limits/token-bucket'
import { dropsRefusals } from '../model/sub-channels'
import { asGatewayError, GatewayError } from '../../errors'
import type { AckSlot } from './acks'
import type { ConnectionHost } from './host'
import { loggedName, modeRefused, wireError, type ProtocolMessage } from './protocol'
import { ResendLookup } from './resend-lookup'

/** Protocol messages (of every operation) a connection may have in flight unanswered before further ones are refused. */
const MAX_PENDING = 10_000

/**
 * One kind of operation a client sends and the server answers with ACK or NACK (MESSAGE,
 * PRESENCE, ANNOTATION, OBJECT): what sets it apart, the rest is the one skeleton of
 * `Operations.operate`. `C` is what `run` acts on (the connection, or its presence).
 */
export interface Operation<C> {
  /** What it is called in its refusals: the log line `realtime <name> refused`, and the mode refusal. */
  name: string
  /** The mode an attachment of the channel must hold (a channel not attached takes it, within the capability). */
  mode: number
  /**
   * Remembered for resend (RTN19a): a resend of its msgSerial after a resume is answered with the
   * first outcome (waited for while it is under way), never applied twice.
   */
  remembered: boolean
  /**
   * Run in order with the channel's ATTACH, DETACH and SYNC (a later one waits for it); else it
   * waits only for what is under way on the channel when it arrives.
   */
  ordered: boolean
  /** Refused on a channel that drops refusals (`::$cursors`): acknowledged with no serial instead of NACKed. */
  dropsRefusals: boolean
  /** Its messages count against the connection's inbound rate (REALTIME_MAX_INBOUND_RATE). */
  rated: boolean
  /**
   * The messages it appends to the channel's log (ids `<connectionId>:<msgSerial>:<i>`), looked up
   * there when the connection resumed without its publish memory; undefined: it is not looked up.
   */
  count?(pm: ProtocolMessage): number | undefined
  /**
   * The connection receives its own copy of what it appended to the channel (by its attachment's
   * modes and `echo`): then it is acknowledged only once this node handed that copy out, so the
   * copy goes first, as the hosted service sends it and the client's state expects it (the
   * LiveObjects plugin reads its objects right after the ACK of an operation it does not apply
   * itself; a chat client's room reaction has arrived when its send resolves). Undefined: never.
   */
  echoed?(host: ConnectionHost, channel: string): boolean
  /** Runs it: what it is acknowledged with (a value when answered at once), or the refusal thrown. */
  run(ctx: C, channel: string, pm: ProtocolMessage, msgSerial: number): Answer<Outcome>
}

/** What an operation is acknowledged with: one serial per message (null: none, e.g. a conflated one). */
export interface Outcome {
  serials: Array<string | null>
}

/**
 * The operations of one realtime connection, each answered in the order protocol messages arrived
 * (acks.ts) through one skeleton: its answer slot, the resend memory, the bounds, the channel's
 * ATTACH under way, the mode check, the run, then ACK or NACK and the refusal's log line. The
 * embedded MESSAGE path stays synchronous: a run that answers with a value is ACKed at once, no
 * promise made, no event-loop turn.
 */
export class Operations {
  /**
   * Until then (ms), operations with a `count` are looked up in the channel's log before they
   * are applied: the connection resumed here without what its earlier node knew of its publishes
   * (that node died), and the client resends the ones it holds unanswered first thing.
   */
  unknownPastUntil = 0
  /** Made on the first lookup. */
  private lookup?: ResendLookup
  /** The connection's inbound budget (REALTIME_MAX_INBOUND_RATE), made on its first rated operation. */
  private inbound?: Bucket

  constructor(
    private readonly host: ConnectionHost,
    /** Messages per second the connection may publish; 0: no bound (nothing is counted). */
    private readonly inboundRate = 0,
  ) {}

  /** A protocol message of the client that needs an answer: `op` says which kind. */
  operate<C>(pm: ProtocolMessage, op: Operation<C>, ctx: C): void {
    const { acks } = this.host
    const msgSerial = pm.msgSerial
    if (typeof msgSerial !== 'number' || !Number.isInteger(msgSerial) || msgSerial < 0)
      return this.host.fail(
        new GatewayError(40000, 'Invalid protocol message: msgSerial must be a non-negative integer'),
      )
    const slot = acks.open(msgSerial, op.remembered)
    if (op.remembered && this.answeredBefore(slot)) return
    if (acks.pending > MAX_PENDING)
      return acks.nack(slot, new GatewayError(42910, 'Too many protocol messages awaiting acknowledgement').toBody())
    if (op.rated && this.inboundRate > 0 && !this.withinInboundRate(Math.max(1, op.count?.(pm) ?? 1)))
      return acks.nack(
        slot,
        new GatewayError(
          42911,
          `Publish rate exceeded: at most ${this.inboundRate} messages per second on one connection`,
        ).toBody(),
      )
    const channel = typeof pm.channel === 'string' ? pm.channel : ''
    if (op.ordered) return this.host.inOrder(channel, () => this.runAfter(undefined, slot, channel, pm, op, ctx))
    const pending = this.host.pendingAttach(channel)
    if (pending || (op.count && this.pastUnknown)) return void this.runAfter(pending, slot, channel, pm, op, ctx)
    // the common case: answered at once when the run answers with a value (an embedded MESSAGE)
    let answer: Answer<Outcome>
    try {
      this.checkMode(channel, op)
      answer = op.run(ctx, channel, pm, msgSerial)
    } catch (e) {
      return this.refused(slot, channel, op, e)
    }
    if (answer instanceof Promise)
      answer.then(
        (r) => this.answer(slot, channel, op, r.serials),
        (e) => this.refused(slot, channel, op, e),
      )
    else acks.ack(slot, answer.serials)
  }

  /** Acknowledges an operation, after the connection's own copy of it where it receives one (`echoed`). */
  private answer(slot: AckSlot, channel: string, op: Operation<unknown>, serials: Array<string | null>) {
    const echo = this.echo(channel, op, serials)
    if (echo) void echo.then(() => this.host.acks.ack(slot, serials))
    else this.host.acks.ack(slot, serials)
  }

  /**
   * Where the broker hands its appends to this node apart from answering them (Redis: the
   * notification comes on another connection than the script's reply), the wait for the newest of
   * `serials` to be handed out here, when the connection receives it; undefined: nothing to wait for.
   */
  private echo(channel: string, op: Operation<unknown>, serials: Array<string | null>) {
    const delivered = this.host.core.delivered
    if (!delivered || !op.echoed?.(this.host, channel)) return undefined
    let last: string | null = null
    for (const s of serials) if (s !== null && (last === null || s > last)) last = s
    return last === null ? undefined : delivered(this.host.principalOf.appId, channel, last)
  }

  /** Answers a resend from the connection's memory (its first outcome, waited for when still under way): false when not a resend. */
  private answeredBefore(slot: AckSlot): boolean {
    const { acks } = this.host
    const earlier = acks.earlier(slot.msgSerial)
    if (earlier === undefined) return false
    if (Array.isArray(earlier)) acks.ack(slot, earlier)
    else void earlier.then((s) => (s.error ? acks.nack(slot, s.error) : acks.ack(slot, s.serials!)))
    return true
  }

  /** Takes `n` messages from the inbound budget (one second of the rate): false when over it. */
  private withinInboundRate(n: number): boolean {
    const r = takeTokens(this.inbound, n, this.inboundRate, this.inboundRate, this.host.core.clock.now())
    this.inbound = r.bucket
    return r.ok
  }

  /** Whether an operation is looked up in the log first (no clock read on a connection that never resumed so). */
  private get pastUnknown(): boolean {
    return this.unknownPastUntil !== 0 && this.unknownPastUntil > this.host.core.clock.now()
  }

  /**
   * An operation run once `before` settled (the channel's operations under way), or in the
   * channel's order, or looked up in the channel's log first (resumed from a node that did not
   * hand its memory over: it died, a resend may be in the log).
   */
  private async runAfter<C>(
    before: Promise<void> | undefined,
    slot: AckSlot,
    channel: string,
    pm: ProtocolMessage,
    op: Operation<C>,
    ctx: C,
  ): Promise<void> {
    try {
      if (before) await before
      this.checkMode(channel, op)
      const count = op.count && this.pastUnknown ? op.count(pm) : undefined
      const logged = count === undefined ? undefined : await this.resends().inLog(channel, slot.msgSerial, count)
      this.answer(slot, channel, op, logged ?? (await op.run(ctx, channel, pm, slot.msgSerial)).serials)
    } catch (e) {
      this.refused(slot, channel, op, e)
    }
  }

  private resends(): ResendLookup {
    return (this.lookup ??= new ResendLookup(this.host))
  }

  /** A channel attached without the operation's mode refuses it (a channel not attached takes it). */
  private checkMode(channel: string, op: Operation<unknown>) {
    const modes = this.host.attachedModes(channel)
    if (modes !== undefined && !(modes & op.mode)) throw modeRefused(channel, op.mode, op.name)
  }

  /** An operation that failed, answered with a NACK (logged at debug with its reason), or dropped where refusals are. */
  private refused(slot: AckSlot, channel: string, op: Operation<unknown>, e: unknown) {
    const err = asGatewayError(e)
    const { log, acks } = this.host
    if (log.enabled('debug'))
      log.debug(`realtime ${op.name} refused`, {
        connectionId: this.host.id,
        channel: loggedName(channel),
        msgSerial: slot.msgSerial,
        code: err.code,
        error: err.message,
      })
    if (op.dropsRefusals && dropsRefusals(channel)) return acks.ack(slot, [null])
    acks.nack(slot, wireError(err))
  }
}
