/**
 * Why a test still fails, for the scorecard: failures that need what the run's namespace does not
 * have (the internet), and the gateway's own known causes with the issue that holds each. A failure
 * no entry explains is listed as "not yet analysed".
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
    match: /ENOTFOUND|EAI_AGAIN|getaddrinfo|ENETUNREACH|echo\.ably\.io|ably-realtime\.com|realtime\.ably\.net/,
    cause: 'internet: the test reaches a host outside the run (no network in the namespace)',
  },
]

/** The cause of a failure: the outside hosts its log names, else the first entry whose pattern matches. */
export function causeOf(text: string, outside?: string[]): string {
  if (outside?.length) return `internet: the test reaches ${outside.join(', ')} (no network in the run)`
  return CAUSES.find((c) => c.match.test(text))?.cause ?? 'not yet analysed'
}
