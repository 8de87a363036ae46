import { afterAll, describe, expect, test } from 'bun:test'
import { createPoster, TargetRefused, type Resolver } from '../../src/lib/http-post'

/**
 * The guarded poster over real HTTP on loopback; only name resolution is the test's (a resolver
 * that answers what an attacker's DNS would), so rebinding can be shown without a DNS server.
 */
const hits: Array<{ path: string; host: string | null }> = []
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch(req) {
    const path = new URL(req.url).pathname
    hits.push({ path, host: req.headers.get('host') })
    if (path === '/redirect') return new Response(null, { status: 302, headers: { location: '/elsewhere' } })
    return new Response('ok')
  },
})
afterAll(() => server.stop(true))

const url = (host: string, path: string) => `http://${host}:${server.port}${path}`
/** Answers `answers` in turn, one per resolution (the last one again when they run out). */
const dns = (...answers: string[][]): { resolve: Resolver; count: () => number } => {
  let n = 0
  return {
    resolve: async () => (answers[Math.min(n++, answers.length - 1)] ?? []).map((address) => ({ address, family: 4 })),
    count: () => n,
  }
}
const refused = async (p: Promise<number>) => {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  )
  expect(e).toBeInstanceOf(TargetRefused)
  return e as TargetRefused
}

describe('guarded poster', () => {
  test('a name resolving to loopback is refused before any connection', async () => {
    hits.length = 0
    const post = createPoster({ allowPrivate: false, resolve: dns(['127.0.0.1']).resolve })
    expect((await refused(post(url('hook.test', '/a'), {}, {}))).message).toContain('127.0.0.1')
    expect(hits).toEqual([])
  })

  test('one private address among public ones refuses the name', async () => {
    const post = createPoster({ allowPrivate: false, resolve: dns(['93.184.215.14', '10.0.0.1']).resolve })
    expect((await refused(post(url('hook.test', '/b'), {}, {}))).message).toContain('10.0.0.1')
  })

  test('address literals are refused without resolving', async () => {
    const d = dns(['93.184.215.14'])
    const post = createPoster({ allowPrivate: false, resolve: d.resolve })
    for (const host of ['127.0.0.1', '[::1]', '0.0.0.0', '169.254.169.254'])
      await refused(post(url(host, '/c'), {}, {}))
    expect(d.count()).toBe(0)
  })

  test('the connection goes to the address that was checked, once resolved (no second lookup to rebind)', async () => {
    hits.length = 0
    // first answer allowed (private allowed here, to reach the loopback server), later answers would point elsewhere
    const d = dns(['127.0.0.1'], ['93.184.215.14'])
    const post = createPoster({ allowPrivate: true, resolve: d.resolve })
    expect(await post(url('hook.test', '/d'), { 'x-rule': 'r1' }, { a: 1 })).toBe(200)
    expect(d.count()).toBe(1)
    expect(hits).toEqual([{ path: '/d', host: `hook.test:${server.port}` }])
  })

  test('redirects are not followed: the 3xx is the answer', async () => {
    hits.length = 0
    const post = createPoster({ allowPrivate: true, resolve: dns(['127.0.0.1']).resolve })
    expect(await post(url('hook.test', '/redirect'), {}, {})).toBe(302)
    expect(hits.map((h) => h.path)).toEqual(['/redirect'])
  })

  test('no answer is status 0, not an exception', async () => {
    const post = createPoster({ allowPrivate: true, resolve: dns(['127.0.0.1']).resolve })
    expect(await post('http://hook.test:1/', {}, {})).toBe(0)
  })
})
