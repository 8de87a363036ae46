import type { BrokerQueue, QueueBroker } from '../../core/ports'
import { RabbitManagement } from './management'
import { AmqpQueueBroker } from './queue-broker'

export interface AmqpSettings {
  amqpUrl: string
  amqpManagementUrl: string
  amqpPublicUrl: string
  amqpBufferMessages: number
  amqpIdleConnectionMs: number
}

/**
 * App queues on RabbitMQ (AMQP_URL): each app's queues in a vhost of its own, declared and
 * published to over AMQP as AMQP_URL's user; vhosts, consumer users and their permissions made
 * through the management API (AMQP_MANAGEMENT_URL, by default AMQP_URL's host and credentials on
 * port 15672). `appQueues` names this deployment's queues of an app (for the move of an earlier
 * layout's queues).
 */
export function createAmqpQueueBroker(
  s: AmqpSettings,
  secret: () => Promise<string>,
  appQueues: (appId: string) => Promise<BrokerQueue[] | undefined>,
  onError: (e: unknown) => void,
): QueueBroker {
  const url = new URL(s.amqpUrl)
  // heartbeats find a connection that died silently (the default is the broker's 60 s)
  if (!url.searchParams.has('heartbeat')) url.searchParams.set('heartbeat', '10')
  let management = s.amqpManagementUrl
  if (!management) {
    const m = new URL(`http://${url.hostname.includes(':') ? `[${url.hostname}]` : url.hostname}:15672`)
    m.username = url.username || 'guest'
    m.password = url.password || 'guest'
    management = m.toString()
  }
  const pub = new URL(s.amqpPublicUrl || s.amqpUrl)
  return new AmqpQueueBroker(
    new RabbitManagement(management),
    secret,
    {
      url: url.toString(),
      publicUrl: `${pub.protocol}//${pub.host}`,
      bufferMessages: s.amqpBufferMessages,
      idleMs: s.amqpIdleConnectionMs,
      appQueues,
    },
    onError,
  )
}
