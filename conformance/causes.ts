/**
 * Why a test still fails, for the scorecard: failures that need what the run's namespace does not
 * have (the internet), the suites' own assumptions that a loopback run breaks, and the gateway's own
 * known causes ("gateway:", with the issue that holds each). Each was found by reading the test and
 * the run's log. A failure no entry explains is listed as "not yet analysed".
 */
export interface Cause {
  /** Tested against "<suite> <file> <test title>\n<error>". */
  match: RegExp
  cause: string
}

export const CAUSES: Cause[] = [
  {
    // the test-support hosts (echo.ably.io, the connectivity checks) are served by echo-server.ts
    match: /ENOTFOUND|EAI_AGAIN|getaddrinfo|ENETUNREACH|realtime\.ably\.net/,
    cause: 'internet: the test reaches a host outside the run (no network in the namespace)',
  },
  {
    match: /rest\/auth Rest embedded JWT/,
    cause:
      "gateway: an external JWT that embeds an Ably token in its JOSE header (`x-ably-token`; a JWS, or a JWE with encrypted=1) is not unwrapped: the gateway reads it as an Ably JWT and refuses it (40144 'kid missing', 40143 for the JWE), where the hosted service authenticates with the embedded token (reference ably-wire §3.4); reported to the lead, no issue yet",
  },
  {
    match:
      /rest\/auth (JWT request with invalid key|Rest JWT with authCallback and invalid keys)[^\n]*\n.*expected 401 to equal 404/,
    cause:
      'gateway: a JWT whose `kid` names a key of no app gets 40400 with HTTP status 401; the suite (as the hosted service) expects status 404 with 40400; reported to the lead, no issue yet',
  },
  {
    match: /realtime\/failure invalid_cred_failure[^\n]*\n.*expected 40400 to equal 40101/,
    cause:
      'gateway: a realtime connection with a Basic key of no app (`this.is:wrong`) fails with 40400 (since ab1e4cb, an unknown key name is 40400 everywhere); the suite, as the hosted service, expects 40101 there (and 40400 only for a JWT naming an unknown app); reported to the lead, no issue yet',
  },
  {
    match: /realtime\/connection connectionPingWithCallback[^\n]*\n.*responseTime was \+ve/,
    cause:
      "the suite's timing: it asserts a ping's responseTime > 0 ms, and over loopback the gateway's HEARTBEAT comes back within the millisecond (responseTime 0); not the gateway's",
  },
  {
    match: /rest\/push push activation push_channel_subscription_(device|client)_id[^\n]*\n.*Timeout/,
    cause:
      "the suite's race: it publishes over REST right after `subscribe()` starts the realtime attach of the push recipient channel, without awaiting it; over loopback the gateway delivers the push to that channel before the attach completes, so the message is never seen (the hosted service's push delivery is slower than an attach); intermittent",
  },
]

/** The cause of a failure: the outside hosts its log names, else the first entry whose pattern matches. */
export function causeOf(text: string, outside?: string[]): string {
  if (outside?.length) return `internet: the test reaches ${outside.join(', ')} (no network in the run)`
  return CAUSES.find((c) => c.match.test(text))?.cause ?? 'not yet analysed'
}
