import { parseSerial } from '../model/serial'
import type { Message, MessageDraft } from '../types'
import type { Annotation, AnnotationSummary } from './ports'

/**
 * How annotations and summaries travel: as ephemeral entries of the channel (kinds `annotation`
 * and `summary`), through the broker like every delivery, so every node hands them to its
 * attachments in channel order, and nothing keeps them in the log (the annotation store does).
 * The entry's serial and timestamp are the annotation's own; its data holds the rest as JSON.
 */

type AnnotationBody = Omit<Annotation, 'id' | 'serial' | 'timestamp' | 'clientId'>

export function annotationEntry(a: Omit<Annotation, 'serial' | 'timestamp'>, connectionId?: string): MessageDraft {
  const { id, clientId, ...body } = a
  const d: MessageDraft = { id, kind: 'annotation', data: JSON.stringify(body), extras: { ephemeral: true } }
  if (clientId !== undefined) d.clientId = clientId
  if (connectionId !== undefined) d.connectionId = connectionId
  return d
}

/** The annotation an entry of kind `annotation` carries. */
export function annotationFromEntry(m: Message): Annotation {
  const body = JSON.parse(String(m.data)) as AnnotationBody
  const a: Annotation = { id: m.id, serial: m.serial, timestamp: parseSerial(m.serial)?.ms ?? m.timestamp, ...body }
  if (m.clientId !== undefined) a.clientId = m.clientId
  return a
}

/** What a summary entry says: the message and its summary. */
export interface SummaryEvent {
  messageSerial: string
  summary: AnnotationSummary
}

/** A summary entry; its name is the annotated message's serial (what a paused session keeps the latest summary by). */
export function summaryEntry(id: string, e: SummaryEvent): MessageDraft {
  return { id, kind: 'summary', name: e.messageSerial, data: JSON.stringify(e), extras: { ephemeral: true } }
}

export function summaryFromEntry(m: Message): SummaryEvent {
  return JSON.parse(String(m.data)) as SummaryEvent
}
