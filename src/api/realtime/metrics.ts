import { deliveredBy } from '../../lib/metrics'

/** Messages written to realtime transports, counted per delivered frame (one batch of a channel). */
export const delivered = deliveredBy('realtime')
