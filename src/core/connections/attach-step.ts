import { asGatewayError } from '../../errors'
import type { AttachRequest } from './attach-request'
import type { AttachStart } from './attach-start'
import type { Attachment } from './attachment'
import type { ConnectionHost } from './host'

/**
 * What a feature does around an ATTACH (presence sync, LiveObjects sync, occupancy events): a
 * step registered in attach-steps.ts. A new feature adds a step there, not lines in the attach.
 */
export interface AttachStep {
  /** What it is called (the list in attach-steps.ts, tests). */
  readonly name: string
  /**
   * Before ATTACHED, the start decided (attach-start.ts): whether the step applies to this
   * attach (undefined: not), and what it adds to it.
   */
  prepare(
    req: AttachRequest,
    start: AttachStart,
    conn: ConnectionHost,
  ): StepPlan | undefined | Promise<StepPlan | undefined>
}

/** What an applying step adds to its attach. */
export interface StepPlan {
  /** Flags ATTACHED carries (HAS_PRESENCE, HAS_OBJECTS). */
  flags?: number
  /** Channel params ATTACHED echoes (`occupancy`). */
  params?: Record<string, string>
  /**
   * Run once ATTACHED went out, in the channel's order (the attach is done when the steps are,
   * each after the one before; a failure fails the channel).
   */
  attached?(att: Attachment): void | Promise<void>
  /**
   * Run after each ATTACHED sent again (an update after a resume gap, `Attachment.notice`), in
   * the background: a failure fails the connection.
   */
  reattached?(att: Attachment): Promise<void>
}

/** The plans of an attach's applying steps, together: what the attach does with them. */
export class AttachPlans {
  /** The flags they add to ATTACHED. */
  flags = 0
  /** The params they add to what ATTACHED echoes. */
  params?: Record<string, string>
  private readonly plans: StepPlan[] = []

  constructor(private readonly conn: ConnectionHost) {}

  add(plan: StepPlan | undefined): void {
    if (!plan) return
    this.flags |= plan.flags ?? 0
    if (plan.params) this.params = { ...this.params, ...plan.params }
    this.plans.push(plan)
  }

  /** The steps' work once ATTACHED went out, one after the other. */
  async attached(att: Attachment): Promise<void> {
    for (const p of this.plans) await p.attached?.(att)
  }

  /** What runs after each later ATTACHED (a failure fails the connection); undefined when no step asks. */
  get reattached(): ((att: Attachment) => void) | undefined {
    const again = this.plans.filter((p) => p.reattached)
    if (!again.length) return undefined
    const run = async (att: Attachment) => {
      for (const p of again) await p.reattached!(att)
    }
    return (att) => void run(att).catch((e) => this.conn.fail(asGatewayError(e)))
  }
}

/** Every step's plan for an attach, in the steps' order. */
export async function planSteps(
  steps: readonly AttachStep[],
  req: AttachRequest,
  start: AttachStart,
  conn: ConnectionHost,
): Promise<AttachPlans> {
  const plans = new AttachPlans(conn)
  for (const step of steps) plans.add(await step.prepare(req, start, conn))
  return plans
}
