import { Authenticator } from './auth/authenticator'
import { TokenRequests, type TokenRequestSettings } from './auth/token-requests'
import { ChannelService, type ChannelSettings } from './channels/channel-service'
import { ChatService, DEFAULT_TYPING_TIMEOUT_MS } from './chat/chat-service'
import { Integrations } from './control/integrations'
import { Management } from './control/management'
import { RulesEngine } from './rules/rules-engine'
import { WebhookDispatcher } from './rules/webhooks'
import { postJson } from '../lib/http-post'
import { Namespaces } from './control/namespaces'
import { Sandbox } from './control/sandbox'
import { Hub } from './fanout/hub'
import { RateLimiter, type LimitSettings } from './limits/rate-limiter'
import { ObjectService } from './objects/object-service'
import { PushService, type PushSettings } from './push/push-service'
import type { Backend, Clock } from './ports'
import { StatsService } from './stats/stats-service'

export type CoreSettings = TokenRequestSettings & ChannelSettings & LimitSettings & PushSettings & { basicAuthRequiresTls: boolean }

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
  objects: ObjectService
  chat: ChatService
  integrations: Integrations
  webhooks: WebhookDispatcher
  push: PushService
}

export function createCore(backend: Backend, clock: Clock, s: CoreSettings): Core {
  const auth = new Authenticator(backend.control, clock, s)
  const namespaces = new Namespaces(backend.control)
  const hub = new Hub(backend.broker, backend.occupancy)
  const stats = new StatsService(backend.stats, clock)
  const limits = new RateLimiter(backend.limits, backend.control, clock, s)
  const webhooks = new WebhookDispatcher(postJson, clock)
  const rules = new RulesEngine(backend.control, backend.queues, webhooks, clock, () => {})
  const management = new Management(backend.control, clock)
  const push = new PushService(backend.push, backend.control, backend.broker, namespaces, limits, clock, postJson, s)
  return {
    clock,
    backend,
    auth,
    tokens: new TokenRequests(auth, backend.nonces, limits, stats, clock, s),
    namespaces,
    hub,
    limits,
    stats,
    channels: new ChannelService(backend.broker, backend.presence, namespaces, hub, stats, limits, rules, s, push),
    management,
    integrations: new Integrations(management, backend.control, backend.queues, clock),
    webhooks,
    push,
    sandbox: new Sandbox(backend.control, backend.presence, stats, clock),
    objects: new ObjectService(backend.objects, backend.broker, namespaces, hub, clock, {
      stateQuery: (p) => limits.take(p.accountId, 'objectReads'),
      stateUpdate: (p) => limits.take(p.accountId, 'objectWrites'),
    }),
    chat: new ChatService(backend.broker, backend.chat, backend.presence, hub, stats, limits, clock, { maxMessageSize: s.maxMessageSize, typingTimeoutMs: DEFAULT_TYPING_TIMEOUT_MS }),
  }
}
