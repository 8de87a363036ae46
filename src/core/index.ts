import { Authenticator } from './auth/authenticator'
import { TokenRequests, type TokenRequestSettings } from './auth/token-requests'
import { ChannelService, type ChannelSettings } from './channels/channel-service'
import { Management } from './control/management'
import { Namespaces } from './control/namespaces'
import { Sandbox } from './control/sandbox'
import { Hub } from './fanout/hub'
import { RateLimiter, type LimitSettings } from './limits/rate-limiter'
import type { Backend, Clock } from './ports'
import { StatsService } from './stats/stats-service'

export type CoreSettings = TokenRequestSettings & ChannelSettings & LimitSettings & { basicAuthRequiresTls: boolean }

/** The domain services of one node, built on a backend's ports. */
export interface Core {
  clock: Clock
  backend: Backend
  auth: Authenticator
  tokens: TokenRequests
  namespaces: Namespaces
  hub: Hub
  limits: RateLimiter
  stats: StatsService
  channels: ChannelService
  management: Management
  sandbox: Sandbox
}

export function createCore(backend: Backend, clock: Clock, s: CoreSettings): Core {
  const auth = new Authenticator(backend.control, clock, s)
  const namespaces = new Namespaces(backend.control)
  const hub = new Hub(backend.broker)
  const stats = new StatsService(backend.stats, clock)
  const limits = new RateLimiter(backend.limits, backend.control, clock, s)
  return {
    clock,
    backend,
    auth,
    tokens: new TokenRequests(auth, backend.nonces, limits, clock, s),
    namespaces,
    hub,
    limits,
    stats,
    channels: new ChannelService(backend.broker, backend.presence, namespaces, hub, stats, limits, s),
    management: new Management(backend.control, clock),
    sandbox: new Sandbox(backend.control, backend.presence, stats, clock),
  }
}
