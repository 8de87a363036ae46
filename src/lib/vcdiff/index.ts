/** VCDIFF (RFC 3284) deltas: the encoder the gateway sends deltas with (see encoder.ts). */
export { vcdiffEncode } from './encoder'
