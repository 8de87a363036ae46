export * from './codes'
export * from './gateway-error'
export * from './as-gateway-error'
