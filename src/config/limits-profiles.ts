import type { SettingName } from './schema'

/**
 * The limit profiles (LIMITS_PROFILE): defaults of limit settings, over the schema's own. `hosted`
 * is the hosted service's documented limits of its Standard package (platform/pricing/limits:
 * connection, channel, message and API limits), so that a load test against the gateway meets
 * the limits production will. docs/limits.md lists both profiles (a test keeps it in step).
 */
export type LimitsProfile = 'default' | 'hosted'

export const LIMITS_PROFILES: Record<LimitsProfile, Partial<Record<SettingName, string>>> = {
  default: {},
  hosted: {
    maxMessageSize: '65536',
    accountMaxConnections: '10000',
    accountMaxChannels: '10000',
    accountMaxNewChannelRate: '250',
    realtimeMaxChannels: '200',
    realtimeMaxInboundRate: '50',
    realtimeMaxOutboundRate: '50',
    channelMaxPublishRate: '50',
    accountMaxConnectionRate: '250',
    presenceMaxMembers: '200',
    connectionStateTtlMs: '120000',
    tokenDefaultTtlMs: '3600000',
    tokenMaxTtlMs: '86400000',
    rateLimits: 'on',
    limitMessagesPerSecond: '2500',
    limitTokenRequestsPerSecond: '250',
  },
}
