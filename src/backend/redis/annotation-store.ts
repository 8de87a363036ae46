import {
  TooManyAnnotations,
  type Annotation,
  type AnnotationStateOp,
  type AnnotationStore,
  type LiveOnlyKind,
  type LiveOnlyMarks,
} from '../../core/channels/ports'
import { pack, unpack } from './codec'
import { BUFFERS, type RedisCommander } from './clients'
import { withTimeout } from './errors'
import type { RedisKeys } from './keys'
import { ANNOTATION_CHANGE_SCRIPT, ANNOTATION_RECORD_SCRIPT, LIVE_ONLY_MARK_SCRIPT, VERSION } from './lua/annotations'
import { ScriptRunner } from './script-runner'

/** Annotations in Redis, shared by every node; each change and each record is one script in the channel's slot. */
export class RedisAnnotationStore implements AnnotationStore {
  private readonly changeScript: ScriptRunner
  private readonly recordScript: ScriptRunner
  private readonly markScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly retentionMs: number,
    private readonly timeoutMs: number,
  ) {
    this.changeScript = new ScriptRunner(cmd, ANNOTATION_CHANGE_SCRIPT)
    this.recordScript = new ScriptRunner(cmd, ANNOTATION_RECORD_SCRIPT)
    this.markScript = new ScriptRunner(cmd, LIVE_ONLY_MARK_SCRIPT)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.timeoutMs)
  }

  async change(
    app: string,
    channel: string,
    s: string,
    op: AnnotationStateOp,
    maxFields: number,
  ): Promise<{ before?: string }> {
    const value = op.op === 'incr' ? String(op.by) : (op.value ?? '')
    const reply = await this.t(
      this.changeScript.run<Array<string | number | null>>(
        [this.keys.annotationState(app, channel, s)],
        [op.op, op.field, value, String(this.retentionMs), String(Math.min(maxFields, Number.MAX_SAFE_INTEGER))],
      ),
    )
    if (Number(reply[0]) < 0) throw new TooManyAnnotations()
    const before = reply[1]
    return before === null || before === undefined ? {} : { before: String(before) }
  }

  async record(app: string, channel: string, a: Annotation, maxLog: number): Promise<void> {
    const s = a.messageSerial
    await this.t(
      this.recordScript.run(
        [this.keys.annotationState(app, channel, s), this.keys.annotationLog(app, channel, s)],
        [pack(a), String(this.retentionMs), String(maxLog)],
      ),
    )
  }

  async current(
    app: string,
    channel: string,
    serial: string,
  ): Promise<{ state: Record<string, string>; version: number }> {
    const reply = await this.t(this.cmd.sendCommand(['HGETALL', this.keys.annotationState(app, channel, serial)]))
    const flat = flatten(reply)
    const i = flat.indexOf(VERSION)
    return { state: stateOf(flat), version: i >= 0 && i % 2 === 0 ? Number(flat[i + 1]) : 0 }
  }

  async states(app: string, channel: string, serials: string[]): Promise<Map<string, Record<string, string>>> {
    const replies = await this.t(
      Promise.all(serials.map((s) => this.cmd.sendCommand(['HGETALL', this.keys.annotationState(app, channel, s)]))),
    )
    const out = new Map<string, Record<string, string>>()
    replies.forEach((reply, i) => {
      const state = stateOf(flatten(reply))
      if (Object.keys(state).length) out.set(serials[i]!, state)
    })
    return out
  }

  async list(app: string, channel: string, serial: string, offset: number, limit: number): Promise<Annotation[]> {
    const key = this.keys.annotationLog(app, channel, serial)
    const items = await this.t(
      this.cmd.sendCommand<Buffer[]>(['LRANGE', key, String(offset), String(offset + limit - 1)], BUFFERS),
    )
    return items.map((b) => unpack<Annotation>(b))
  }

  async mark(app: string, channel: string, kind: LiveOnlyKind, serial: string): Promise<void> {
    await this.t(
      this.markScript.run(
        [this.keys.liveOnlyMarks(app, channel)],
        [MARK_FIELD[kind], serial, String(this.retentionMs)],
      ),
    )
  }

  async marks(app: string, channel: string): Promise<LiveOnlyMarks> {
    const [a, s] = await this.t(
      this.cmd.sendCommand<Array<string | null>>(['HMGET', this.keys.liveOnlyMarks(app, channel), 'a', 's']),
    )
    return { ...(a ? { annotation: String(a) } : {}), ...(s ? { summary: String(s) } : {}) }
  }
}

const MARK_FIELD: Record<LiveOnlyKind, string> = { annotation: 'a', summary: 's' }

function flatten(reply: unknown): string[] {
  return Array.isArray(reply) ? reply.map(String) : Object.entries(reply as Record<string, string>).flat()
}

function stateOf(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i] !== VERSION) out[flat[i]!] = flat[i + 1]!
  return out
}
