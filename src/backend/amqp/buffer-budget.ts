/** What one account's messages take of a node's buffer, and the lanes (apps) that hold them. */
export interface AccountShare {
  readonly id: string
  held: number
  readonly lanes: Set<Evictable>
}

/** A holder of buffered messages that can give up its oldest one still waiting (not in flight). */
export interface Evictable {
  /** Messages waiting (not published yet, or to be sent again). */
  waiting(): number
  /** Drops the oldest waiting message (counted by the holder); false when none waits. */
  evictOldest(): boolean
}

/**
 * The node's queue buffer (AMQP_BUFFER_MESSAGES) shared fairly between accounts (max-min): while
 * there is room every message is taken; once it is full, a message of an account holding fewer
 * than the account that holds the most takes the place of that account's oldest waiting message.
 * So no account's messages are dropped for want of room while another account holds more than
 * it: a tenant that floods the buffer during a broker outage loses its own oldest messages, not
 * another tenant's. Finding the largest holder scans the accounts holding messages, and only
 * when the buffer is full.
 */
export class BufferBudget {
  held = 0
  private readonly shares = new Map<string, AccountShare>()

  constructor(private readonly max: number) {}

  /** The account's share, with `lane` among its holders (until `leave`). */
  join(accountId: string, lane: Evictable): AccountShare {
    let share = this.shares.get(accountId)
    if (!share) this.shares.set(accountId, (share = { id: accountId, held: 0, lanes: new Set() }))
    share.lanes.add(lane)
    return share
  }

  /** The lane holds nothing of the account any more (it closed). */
  leave(share: AccountShare, lane: Evictable): void {
    share.lanes.delete(lane)
    if (share.lanes.size === 0 && share.held === 0) this.shares.delete(share.id)
  }

  /**
   * Room for one more message of `share`, taken (counted) when true: free room, or the place of
   * the oldest waiting message of the account holding the most when that account holds more than
   * `share`. False: the message is to be dropped (the node is full and `share` holds the most).
   */
  take(share: AccountShare): boolean {
    if (this.held >= this.max && !this.evictFor(share)) return false
    share.held++
    this.held++
    return true
  }

  /** One message of `share` left the buffer (confirmed or dropped). */
  release(share: AccountShare): void {
    share.held--
    this.held--
    if (share.held === 0 && share.lanes.size === 0) this.shares.delete(share.id)
  }

  private evictFor(share: AccountShare): boolean {
    let largest: AccountShare | undefined
    for (const s of this.shares.values()) if (!largest || s.held > largest.held) largest = s
    if (!largest || largest === share || largest.held <= share.held) return false
    let lane: Evictable | undefined
    for (const l of largest.lanes) if (!lane || l.waiting() > lane.waiting()) lane = l
    // its evicted message is released by its lane, which makes the room
    return !!lane && lane.evictOldest()
  }
}
