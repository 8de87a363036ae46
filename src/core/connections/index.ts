/**
 * The realtime connection's public surface, for the transports' adapters (api/realtime): the
 * registry that opens connections on a transport, the connection a transport hands client
 * protocol messages to, the Transport port it writes through, and the protocol's vocabulary.
 */
export { ConnectionRegistry } from './registry'
export { Connection, type ConnectParams } from './connection'
export type { Transport, DeliveryFilter } from './transport'
export type { ConnectionServices } from './services'
export type { Timers } from '../ports'
export { Action, type ProtocolMessage } from './protocol'
export type { RealtimeLimits, RealtimeSettings } from './settings'
export { presenceFromEntry } from '../presence/presence-service'
export { annotationFromEntry, summaryFromEntry } from '../channels/annotation-entries'
export type { Message, PresenceMessage } from '../types'
/** Where a comet request of another process's connection is handed (api/realtime/comet-handover.ts). */
export { issuingNodeOf } from '../auth/connection-keys'
/** What the transports need to frame LiveObjects (object-ops.ts). */
export { SITE_CODE } from '../objects/live-service'
export type { MapEntry, ObjectData } from '../objects/ports'
/** The `appendRollupWindow` transport param (fanout/delivery-stages.ts). */
export { appendRollupWindowParam } from '../fanout/delivery-stages'
