import type { ControlStore } from '../ports'

/**
 * Watches that the store still holds the data this node started on. Bootstrap writes an epoch
 * record with the data; a store that lost its data (Redis restarted without persistence) no
 * longer has it, or has another one once a node bootstrapped it anew, while this node keeps
 * serving keys and accounts from its caches that the store no longer knows. Then the node is not
 * ready (/ready 503) until the epoch is its own again: the data restored from persistence, or
 * the node restarted (it then starts on what the store holds now). Finding the epoch gone also
 * marks the store lost, so a node starting later refuses to bootstrap over it unless the
 * operator accepts the loss (REDIS_ACCEPT_DATA_LOSS).
 */
export class DataGuard {
  private expected?: string
  private problem?: string

  constructor(private readonly control: ControlStore) {}

  /** The epoch this node bootstrapped on (before it is known, the first one seen is taken). */
  expect(epoch: string): void {
    this.expected = epoch
  }

  /** Reads the store's epoch: the problem when it is not this node's (undefined when all is well). */
  async check(): Promise<string | undefined> {
    let current: string | undefined
    try {
      current = await this.control.epoch()
    } catch {
      return this.problem // unreachable is not a verdict on the data (readiness reports it anyway)
    }
    if (this.expected === undefined) this.expected = current
    if (current === this.expected) return (this.problem = undefined)
    if (current === undefined) await this.control.markDataLost().catch(() => {})
    this.problem =
      current === undefined
        ? `the store lost its data: its epoch record ${this.expected} is gone (Redis restarted without persistence?); this node serves cached accounts and keys the store no longer has. Restore the data, or restart the nodes once a node was started with REDIS_ACCEPT_DATA_LOSS=true`
        : `the store holds other data (epoch ${current}, this node started on ${this.expected}): it was lost and bootstrapped anew; restart this node`
    return this.problem
  }
}
