/** The consumer user of an app (it reads that app's queues and does nothing else). */
export const consumerUser = (appId: string) => `app.${appId}`

/**
 * The vhost of an app's queues: only its consumer user (and the gateway's) may open it. In a
 * shared vhost any user that may open it can passively declare any queue there and read its
 * message and consumer counts: RabbitMQ checks no permission for `queue.declare` with passive.
 */
export const appVhost = (appId: string) => `app.${appId}`

export const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** What an app's consumer may do in its vhost: read its queues (`<appId>:<name>`), nothing else. */
export const consumerPermissions = (appId: string) => ({
  configure: '^$',
  write: '^$',
  read: `^${escapeRegExp(appId)}:`,
})
