import { Action, annotationFromEntry, summaryFromEntry, type Message } from '../../core/connections'
import { annotationToWire } from './annotation'

/**
 * Protocol messages of annotation deliveries, as the hosted service frames them: ANNOTATION (21) with the
 * `annotations` array (always present: ably-js drops a frame without it), and the message's
 * summary as a MESSAGE of action 4 (`message.summary`) whose serial is the annotated message's.
 * Neither carries a channelSerial: they are not entries a resume can name.
 */
export function annotationsMessage(entries: Message[], channel: string): object {
  const annotations = entries.map((m) => annotationToWire(annotationFromEntry(m), m.connectionId))
  return { action: Action.ANNOTATION, channel, annotations }
}

export function summariesMessage(entries: Message[], channel: string): object {
  const messages = entries.map((m) => {
    const e = summaryFromEntry(m)
    return { id: m.id, action: 4, serial: e.messageSerial, timestamp: m.timestamp, annotations: { summary: e.summary } }
  })
  return { action: Action.MESSAGE, channel, messages }
}
