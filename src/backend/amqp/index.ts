import type { QueueBroker } from '../../core/ports'
import { AmqpConnection } from './connection'
import { RabbitManagement } from './management'
import { AmqpQueueBroker } from './queue-broker'

export interface AmqpSettings {
  amqpUrl: string
  amqpManagementUrl: string
  amqpPublicUrl: string
  amqpBufferMessages: number
}

/** The broker's vhost as a URL names it (`amqp://host` and `amqp://host/` both mean `/`). */
const vhostOf = (u: URL) => decodeURIComponent(u.pathname.slice(1)) || '/'

/**
 * App queues on RabbitMQ (AMQP_URL): queues declared and messages published over AMQP as
 * AMQP_URL's user; consumer users and their permissions made through the management API
 * (AMQP_MANAGEMENT_URL, by default AMQP_URL's host and credentials on port 15672).
 */
export function createAmqpQueueBroker(
  s: AmqpSettings,
  secret: () => Promise<string>,
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
  const publicUrl = `${pub.protocol}//${pub.host}${pub.pathname}`
  let broker: AmqpQueueBroker | undefined
  const conn = new AmqpConnection(url.toString(), () => broker?.pump(), onError)
  broker = new AmqpQueueBroker(
    conn,
    new RabbitManagement(management),
    secret,
    { vhost: vhostOf(url), publicUrl, bufferMessages: s.amqpBufferMessages },
    onError,
  )
  return broker
}
