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
    match: /expected 403 to equal 401/,
    cause:
      "the interface spec: a REST capability refusal is 403 / 40160 by the spec's status table, where the hosted service answers 401 / 40160 (docs/errors.md)",
  },
  {
    // the test-support hosts (echo.ably.io, the connectivity checks) are served by echo-server.ts
    match: /ENOTFOUND|EAI_AGAIN|getaddrinfo|ENETUNREACH|realtime\.ably\.net/,
    cause: 'internet: the test reaches a host outside the run (no network in the namespace)',
  },
  {
    match: /realtime\/connection connectionPingWithCallback[^\n]*\n.*responseTime was \+ve/,
    cause:
      "the suite's timing: it asserts a ping's responseTime > 0 ms, and over loopback the gateway's HEARTBEAT comes back within the millisecond (responseTime 0); not the gateway's",
  },
  {
    match: /realtime\/failure channel_backoff_[^\n]*\n.*Timeout/,
    cause:
      "the suite's timing: it checks each of the client's own channel retry intervals (150 ms, growing) within 10 ms of its bounds and only finishes when all hold; on a loaded 2-core machine a timer fires late, the check throws inside an event listener and the test waits out its 60 s (the gateway answers every ATTACH, the client ignores the ATTACHED on purpose); intermittent, any backend, any transport",
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
