import type { ControlStore, QueueBroker, QueueStore } from '../ports'
import { brokerQueue, unreachableThrow } from './integrations'

/**
 * Deletes an app with what it holds outside the control store: its queues (in the broker, or
 * their messages in the embedded queue store) and, on a broker, its consumer user (with its
 * permissions). The broker goes first: when it cannot be reached the delete answers 503 and the
 * app stays, so it can be retried; nothing of a deleted app is left readable there. An app
 * without queues is deleted even while the broker is away.
 */
export class AppRemoval {
  constructor(
    private readonly control: ControlStore,
    private readonly queues: QueueStore,
    private readonly broker?: QueueBroker,
  ) {}

  async remove(appId: string): Promise<void> {
    const queues = await this.control.listQueues(appId)
    const broker = this.broker
    if (broker) {
      for (const q of queues) await broker.remove(brokerQueue(q)).catch(unreachableThrow)
      // an app without queues is not held up by a broker away (its user, if any, reads no queue)
      await broker.removeConsumer(appId).catch(queues.length ? unreachableThrow : () => {})
    }
    await this.control.deleteApp(appId)
    if (!broker) for (const q of queues) await this.queues.drop(q.id)
  }
}
