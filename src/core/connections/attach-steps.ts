import type { AttachStep } from './attach-step'
import { OBJECT_SYNC } from './object-ops'
import { OCCUPANCY_EVENTS } from './occupancy-ops'
import { PRESENCE_SYNC } from './presence-ops'

/**
 * What every ATTACH runs around its ATTACHED, in this order (attach-step.ts): the members of a
 * fresh presence subscriber (SYNC), the objects of an object subscriber (OBJECT_SYNC, again after
 * every later ATTACHED), then occupancy events. A new feature adds its step here. (Deltas'
 * first whole message needs no step: every attachment has a delta stage of its own, which starts
 * without a base: attachment-stages.ts.)
 */
export const ATTACH_STEPS: readonly AttachStep[] = [PRESENCE_SYNC, OBJECT_SYNC, OCCUPANCY_EVENTS]
