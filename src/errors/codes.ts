/**
 * The one code table: every error code the gateway emits, with its HTTP status and default
 * message. Codes follow the hosted service's numbering (see shared/reference/ably-wire.md §3.5);
 * statuses follow the interface spec and the architecture decisions where those differ.
 */
export const ERROR_CODES = {
  40000: { status: 400, message: 'Bad request' },
  40001: { status: 400, message: 'Invalid request body' },
  40003: { status: 400, message: 'Invalid request parameter value' },
  40006: { status: 400, message: 'Invalid connection id' },
  40009: { status: 413, message: 'Maximum message length exceeded' },
  40010: { status: 400, message: 'Invalid channel name' },
  40012: { status: 400, message: 'Invalid client ID' },
  40013: { status: 400, message: 'Invalid message data or encoding' },
  40031: { status: 400, message: 'Invalid publish request (invalid client-specified id)' },
  40101: { status: 401, message: 'Invalid credentials' },
  40102: { status: 401, message: 'Invalid clientId for credentials' },
  40103: { status: 401, message: 'Invalid use of Basic authentication over non-TLS transport' },
  40104: { status: 401, message: 'Timestamp not current' },
  40105: { status: 401, message: 'Nonce value replayed' },
  40106: { status: 401, message: 'No authentication method provided' },
  40131: { status: 401, message: 'API key has been revoked' },
  40140: { status: 401, message: 'Token error' },
  40141: { status: 401, message: 'Token revoked' },
  40142: { status: 401, message: 'Token expired' },
  40143: { status: 401, message: 'Token not recognised' },
  40144: { status: 401, message: 'Invalid JWT' },
  40160: { status: 403, message: 'Operation not permitted with provided capability' },
  40162: { status: 401, message: 'Operation requires Basic authentication' },
  40300: { status: 403, message: 'Forbidden' },
  40311: { status: 403, message: 'Application requires a TLS connection' },
  40400: { status: 404, message: 'Not found' },
  40500: { status: 405, message: 'Method not allowed' },
  40800: { status: 408, message: 'Request timeout' },
  40900: { status: 409, message: 'Conflict' },
  42910: { status: 429, message: 'Rate limit exceeded' },
  50000: { status: 500, message: 'Internal error' },
  80003: { status: 404, message: 'Connection disconnected: reconnect and resume' },
  80008: { status: 400, message: 'Unable to resume: messages no longer retained' },
  80018: { status: 400, message: 'Invalid connection key' },
  80020: { status: 429, message: 'Subscriber too slow: buffered data limit exceeded' },
  50003: { status: 503, message: 'Service unavailable' },
  90000: { status: 400, message: 'Channel operation failed' },
  90003: { status: 404, message: 'Unable to recover channel (messages expired)' },
  91000: { status: 400, message: 'Unable to enter presence channel (no clientId)' },
  91003: { status: 400, message: 'Unable to enter presence channel (maximum member limit exceeded)' },
  90021: { status: 400, message: 'Too many channels on this connection' },
  92000: { status: 400, message: 'Invalid object message' },
  92001: { status: 400, message: 'Object limit exceeded' },
  92002: { status: 400, message: 'Object has been deleted' },
  92003: { status: 400, message: 'Root object has been deleted' },
  92004: { status: 404, message: 'Object not found' },
  92005: { status: 400, message: 'Path matches no object' },
  92006: { status: 400, message: 'Object operation names neither an objectId nor a path' },
  92007: { status: 400, message: 'Wildcard paths are not allowed for creates' },
  93002: {
    status: 400,
    message: 'Message updates, deletes and appends need the mutableMessages rule on the channel namespace',
  },
} as const satisfies Record<number, { status: number; message: string }>

export type ErrorCode = keyof typeof ERROR_CODES

export const HELP_URL = 'https://help.ably.io/error/'
