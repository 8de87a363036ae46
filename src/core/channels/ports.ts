/**
 * The versions port: what mutable messages (namespaces with `mutableMessages`) keep beside the
 * channel's log. The log holds each change as an entry of kind `mutation` (its serial is the
 * version serial); the store indexes them per message, so the latest version and the list of
 * versions are one lookup each, also after the log no longer holds them. Every backend (memory +
 * SQLite, Redis) implements it; test/contracts holds both to these contracts. The store owns
 * retention: a message's record goes once it has not been written for the retention window.
 */
import type { Message } from '../types'

/** What is recorded of a message that has been changed. */
export interface VersionRecord {
  /** The message in its latest version (its `version.serial` is the newest version serial recorded). */
  latest: Message
  /** Versions recorded, the original included. */
  count: number
}

export interface VersionQuery {
  /** Only versions with a serial strictly after (forwards) or before (backwards) this one. */
  cursor?: string
  limit: number
  direction: 'forwards' | 'backwards'
}

/** One put: a change of a message, recorded with the latest version it makes (see `put`). */
export interface VersionWrite {
  /** The message as published (recorded as its first version with its first change). */
  original: Message
  /**
   * How many versions the record must still hold (its `count` as read; 0: no record yet). Every
   * write of a version not recorded before adds one, so any write in between makes it stale, a
   * write of an older version too (comparing the newest version serial would miss that one).
   */
  expected: number
  /** The change: an entry of kind `mutation` of the message. */
  version: Message
  /** The message in its latest version with the change. */
  latest: Message
}

export interface VersionStore {
  /** The record of one message, if it has been changed (and not forgotten). */
  get(appId: string, channel: string, serial: string): Promise<VersionRecord | undefined>
  /** Latest versions of those of `serials` that have been changed, by message serial. */
  latest(appId: string, channel: string, serials: string[]): Promise<Map<string, Message>>
  /**
   * Records `w.version` and `w.latest` as the message's latest version, atomically, provided the
   * record still holds `w.expected` versions (0: the message has no record yet, and `w.original` is
   * recorded as its first version). False when another write came first: nothing is written.
   * Recording a version that is already recorded (same serial) replaces it. `get` reads `latest`
   * and `count` together (one state of the record).
   */
  put(appId: string, channel: string, w: VersionWrite): Promise<boolean>
  /**
   * Versions of a message by serial, the original (whose serial is the message's) first going
   * forwards; empty when the message has no record.
   */
  versions(appId: string, channel: string, serial: string, q: VersionQuery): Promise<Message[]>
}

/**
 * An annotation of a message (see annotations.ts): its own serial is its entry's in the channel's
 * log (delivered live, never kept there), its `messageSerial` the annotated message's.
 */
export interface Annotation {
  id: string
  /** 0 create, 1 delete. */
  action: number
  serial: string
  messageSerial: string
  type: string
  name?: string
  count?: number
  clientId?: string
  timestamp: number
  /** A string (binary data is base64 text with `base64` ending the encoding). */
  data?: string
  encoding?: string
  extras?: Record<string, unknown>
}

/** One change of a message's summary state: set or remove a field, or add to it (at 0 or below it goes). */
export type AnnotationStateOp =
  | { field: string; op: 'set'; value: string }
  | { field: string; op: 'del'; value?: string }
  | { field: string; op: 'incr'; by: number }

/** The kinds of live-only entries a channel delivers (never in its log: a resume's replay cannot give them back). */
export type LiveOnlyKind = 'annotation' | 'summary'

/** The newest serial of each kind of live-only entry a channel delivered, within the retention. */
export type LiveOnlyMarks = Partial<Record<LiveOnlyKind, string>>

/** A message's annotation summary, keyed by annotation type (the wire's `annotations.summary`). */
export type AnnotationSummary = Record<string, unknown>

/** What a store throws when an annotation would add a field to a message holding the most allowed. */
export class TooManyAnnotations extends Error {
  constructor() {
    super('too many annotations')
  }
}

/**
 * Annotations of messages: per message, the list of its annotations (oldest first, the newest
 * `maxLog` kept) and its summary state (a flat field map, see annotations.ts). Every backend
 * (memory + SQLite, Redis) implements it; the store owns retention (a message's annotations go
 * once none has been written for the retention window). An annotation changes the state first
 * (where the state may refuse it) and is recorded in the list once delivered, so an annotation
 * refused is never delivered, and one delivered is listed.
 */
export interface AnnotationStore {
  /**
   * Applies `op` to the message's state, atomically; answers the field's value before (undefined:
   * absent). Rejects with TooManyAnnotations when `op` would add a field to a state holding
   * `maxFields` (nothing is written then).
   */
  change(
    appId: string,
    channel: string,
    messageSerial: string,
    op: AnnotationStateOp,
    maxFields: number,
    now: number,
  ): Promise<{ before?: string }>
  /** Appends `a` to its message's list (the newest `maxLog` kept) and bumps the message's version. */
  record(appId: string, channel: string, a: Annotation, maxLog: number): Promise<void>
  /** One message's state and its version (0: never annotated). */
  current(
    appId: string,
    channel: string,
    messageSerial: string,
  ): Promise<{ state: Record<string, string>; version: number }>
  /** The states of those of `serials` that have any annotation. */
  states(appId: string, channel: string, serials: string[]): Promise<Map<string, Record<string, string>>>
  /** Annotations of a message, oldest first, from position `offset` (0: the oldest kept), at most `limit`. */
  list(appId: string, channel: string, messageSerial: string, offset: number, limit: number): Promise<Annotation[]>
  /**
   * Notes that the channel delivered a live-only entry of `kind` at `serial` (kept when newer than
   * the one noted), so that a node resuming a connection it holds nothing of can tell whether the
   * client missed one (AnnotationService.missedSince).
   */
  mark(appId: string, channel: string, kind: LiveOnlyKind, serial: string, now: number): Promise<void>
  /** The channel's marks (`mark`). */
  marks(appId: string, channel: string): Promise<LiveOnlyMarks>
}
