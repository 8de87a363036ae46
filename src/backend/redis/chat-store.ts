import {
  TooManyReactions,
  reactionField,
  type ChatStore,
  type MessageState,
  type ReactionOp,
  type ReactionRecord,
  type RoomRecord,
  type TypingState,
} from '../../core/chat/ports'
import { BUFFERS, type RedisCommander } from './clients'
import { withTimeout } from './errors'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import { CHAT_REACT_SCRIPT, CHAT_TYPING_SCRIPT } from './lua/chat'

/** Rooms past the retention window are dropped from the registry at most this often. */
const PRUNE_EVERY_MS = 60_000

/**
 * Chat state in Redis, shared by every node: one hash per message (its reaction records,
 * expiring with the message retention), a sorted set of rooms by last activity and one
 * of typers by expiry. Each multi-step write is one script (scripts.ts).
 */
export class RedisChatStore implements ChatStore {
  private readonly react_: ScriptRunner
  private readonly typing: ScriptRunner
  private lastPrune = 0

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly retentionMs: number,
    private readonly timeoutMs: number,
  ) {
    this.react_ = new ScriptRunner(cmd, CHAT_REACT_SCRIPT)
    this.typing = new ScriptRunner(cmd, CHAT_TYPING_SCRIPT)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.timeoutMs)
  }

  async states(app: string, room: string, serials: string[]): Promise<Map<string, MessageState>> {
    const replies = await this.t(
      Promise.all(serials.map((s) => this.cmd.sendCommand(['HGETALL', this.keys.chatMessage(app, room, s)], BUFFERS))),
    )
    const out = new Map<string, MessageState>()
    replies.forEach((reply, i) => {
      const fields = entries(reply)
      // `n` and `v` (a version, before edits went to the version store) end with the retention
      const state: MessageState = { reactions: [] }
      for (const [field, value] of fields) {
        if (field !== 'n' && field !== 'v') state.reactions.push(parseRecord(value.toString()))
      }
      if (state.reactions.length) out.set(serials[i]!, state)
    })
    return out
  }

  async react(
    app: string,
    room: string,
    serial: string,
    op: ReactionOp,
    max: number,
  ): Promise<{ changed: boolean; reactions: ReactionRecord[] }> {
    const { remove, count: _count, ...record } = op
    const reply = await this.t(
      this.react_.run<Array<number | string>>(
        [this.keys.chatMessage(app, room, serial)],
        [
          remove ? '1' : '0',
          op.kind,
          reactionField(op.kind, op.name, op.clientId),
          String(op.count),
          JSON.stringify(record),
          String(this.retentionMs),
          String(max),
        ],
      ),
    )
    if (Number(reply[0]) === -1) throw new TooManyReactions()
    return { changed: Number(reply[0]) === 1, reactions: reply.slice(1).map((v) => parseRecord(String(v))) }
  }

  async touchRoom(app: string, room: string, now: number): Promise<void> {
    const key = this.keys.chatRooms(app)
    const ops: Promise<unknown>[] = [this.cmd.sendCommand(['ZADD', key, 'GT', String(now), room])]
    if (now - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = now
      ops.push(this.cmd.sendCommand(['ZREMRANGEBYSCORE', key, '-inf', `(${now - this.retentionMs}`]))
    }
    await this.t(Promise.all(ops))
  }

  async room(app: string, room: string, now: number): Promise<RoomRecord | undefined> {
    const score = await this.t(this.cmd.sendCommand(['ZSCORE', this.keys.chatRooms(app), room]))
    if (score === null || score === undefined) return undefined
    const active = Number(score)
    return active >= now - this.retentionMs ? { roomId: room, lastActivity: active } : undefined
  }

  async rooms(app: string, after: string | undefined, limit: number, now: number): Promise<RoomRecord[]> {
    const reply = await this.t(
      this.cmd.sendCommand<unknown[]>([
        'ZRANGEBYSCORE',
        this.keys.chatRooms(app),
        String(now - this.retentionMs),
        '+inf',
        'WITHSCORES',
      ]),
    )
    // `[member, score]` pairs (RESP3) or a flat list
    const pairs =
      reply.length && Array.isArray(reply[0])
        ? (reply as [string, unknown][])
        : reply.flatMap((v, i) => (i % 2 ? [] : [[v, reply[i + 1]] as [string, unknown]]))
    const out: RoomRecord[] = []
    for (const [roomId, score] of pairs)
      if (after === undefined || roomId > after) out.push({ roomId: String(roomId), lastActivity: Number(score) })
    return out.sort((a, b) => (a.roomId < b.roomId ? -1 : a.roomId > b.roomId ? 1 : 0)).slice(0, limit)
  }

  setTyping(
    app: string,
    room: string,
    clientId: string,
    expiresAt: number | undefined,
    now: number,
  ): Promise<TypingState> {
    return this.applyTyping(app, room, now, clientId, expiresAt === undefined ? '' : String(expiresAt))
  }

  expireTyping(app: string, room: string, now: number): Promise<TypingState> {
    return this.applyTyping(app, room, now, '', '')
  }

  private async applyTyping(
    app: string,
    room: string,
    now: number,
    clientId: string,
    expiresAt: string,
  ): Promise<TypingState> {
    const [was, expired, typers, next] = await this.t(
      this.typing.run<[number, string[], string[], string]>(
        [this.keys.chatTyping(app, room)],
        [String(now), clientId, expiresAt],
      ),
    )
    return {
      was: Number(was) === 1,
      expired: [...expired].sort(),
      typers: [...typers].sort(),
      next: next === '' ? undefined : Number(next),
    }
  }
}

function parseRecord(value: string): ReactionRecord {
  const sp = value.indexOf(' ')
  return { ...(JSON.parse(value.slice(sp + 1)) as Omit<ReactionRecord, 'count'>), count: Number(value.slice(0, sp)) }
}

/** HGETALL answers a flat `[k, v, ...]` list or an object, depending on the protocol. */
function entries(reply: unknown): Array<[string, Buffer]> {
  if (!Array.isArray(reply)) return Object.entries(reply as Record<string, Buffer>)
  const out: Array<[string, Buffer]> = []
  for (let i = 0; i < reply.length; i += 2) out.push([String(reply[i]), reply[i + 1] as Buffer])
  return out
}
