/**
 * Mutable messages under concurrency and restarts, on both backends: concurrent changes of one
 * message on a node, a change recorded after a later one (as another node makes it), two nodes
 * changing one message at once (Redis), and changes surviving a restart.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MutableMessages } from '../../src/core/channels/mutable-messages'
import type { VersionStore } from '../../src/core/channels/ports'
import type { Principal } from '../../src/core/auth/principal'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { onRedis } from '../helpers/redis-cluster'
import { freshMutable, getMessage, messagesPath as path, mutableNamespace, publishOne } from '../helpers/mutable'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
  await mutableNamespace(gw)
})
afterAll(async () => {
  await gw.close()
})

const fresh = () => freshMutable('cc')
const publish = (g: TestGateway, ch: string, data: string) => publishOne(g, ch, { name: 'n', data })
async function change(g: TestGateway, ch: string, serial: string, body: unknown): Promise<string> {
  const r = await g.request(path(ch, `/${serial}`), { method: 'PATCH', json: body })
  const text = await r.text()
  expect(`${r.status} ${text}`).toStartWith('200 ')
  return (JSON.parse(text) as { versionSerial: string }).versionSerial
}
const versionsOf = async (g: TestGateway, ch: string, serial: string) =>
  (await (await g.request(path(ch, `/${serial}/versions?limit=1000`))).json()) as Record<string, any>[]

describe('concurrent changes', () => {
  test('parallel appends to one message on one node: each once, in version order', async () => {
    const ch = fresh()
    const s = await publish(gw, ch, '')
    const fragments = Array.from({ length: 40 }, (_, i) => `<${i}>`)
    await Promise.all(fragments.map((data) => change(gw, ch, s, { action: 5, data })))
    const versions = await versionsOf(gw, ch, s)
    expect(versions).toHaveLength(41)
    const inOrder = versions.slice(1).map((v) => v.data as string)
    expect([...inOrder].sort()).toEqual([...fragments].sort())
    expect((await getMessage(gw, ch, s)).data).toBe(inOrder.join(''))
  })

  describe('a change recorded after a later change of the same message (another node was faster)', () => {
    /**
     * A node whose store lets "another node" (a second service on the same backend) make
     * `other` and record it while this node's change is published but not yet recorded.
     */
    function raced(other: unknown) {
      const real = gw.backend.versions
      let service: MutableMessages
      let race: (() => Promise<unknown>) | undefined
      const store: VersionStore = {
        get: (...a) => real.get(...a),
        latest: (...a) => real.latest(...a),
        versions: (...a) => real.versions(...a),
        async put(...a) {
          const r = race
          race = undefined
          await r?.()
          return real.put(...a)
        },
      }
      const core = gw.core
      const node = new MutableMessages(gw.backend.broker, store, core.namespaces, core.limits, core.stats, {
        maxMessageSize: 65536,
        maxMessageVersions: 100,
      })
      return {
        async change(p: Principal, ch: string, serial: string, body: unknown) {
          race = () => (service ??= core.messages).change(p, ch, serial, other)
          return node.change(p, ch, serial, body)
        },
      }
    }
    const principal = () => gw.core.auth.authenticate({ authorization: `Basic ${btoa(gw.key)}`, secure: () => false })

    test.each([
      ['two appends', { action: 5, data: 'A' }, { action: 5, data: 'B' }, 'xAB'],
      ['an update, then an append', { action: 1, data: 'U' }, { action: 5, data: 'B' }, 'UB'],
      ['an append, then an update', { action: 5, data: 'A' }, { action: 1, data: 'U' }, 'U'],
      ['an append, then a delete', { action: 5, data: 'A' }, { action: 2 }, 'x'],
    ])('%s: the latest version folds both in serial order', async (_what, first, later, expected) => {
      const ch = fresh()
      const s = await publish(gw, ch, 'x')
      const before = await change(gw, ch, s, { action: 5, data: '' })
      const v = await raced(later).change(await principal(), ch, s, first)
      const versions = await versionsOf(gw, ch, s)
      expect(versions.map((m) => m.version?.serial ?? m.serial)).toEqual([s, before, v, versions[3]!.version.serial])
      expect(versions[3]!.version.serial > v).toBe(true)
      const latest = await getMessage(gw, ch, s)
      expect(latest.data).toBe(expected)
      expect(latest.version.serial).toBe(versions[3]!.version.serial)
    })

    test('the first change of a message, raced by another first change', async () => {
      const ch = fresh()
      const s = await publish(gw, ch, 'x')
      await raced({ action: 5, data: 'B' }).change(await principal(), ch, s, { action: 5, data: 'A' })
      expect((await getMessage(gw, ch, s)).data).toBe('xAB')
      expect(await versionsOf(gw, ch, s)).toHaveLength(3)
    })
  })

  test.skipIf(!onRedis())(
    'two nodes appending to one message at once: every fragment once, in version order',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gw-two-nodes-'))
      const a = await createTestGateway({ dataDir: dir })
      await mutableNamespace(a)
      const b = await createTestGateway({ dataDir: dir })
      try {
        const ch = fresh()
        const s = await publish(a, ch, '')
        const fragments = Array.from({ length: 30 }, (_, i) => `<${i}>`)
        await Promise.all(fragments.map((data, i) => change(i % 2 ? a : b, ch, s, { action: 5, data })))
        for (const g of [a, b]) {
          const versions = await versionsOf(g, ch, s)
          expect(versions).toHaveLength(31)
          expect((await getMessage(g, ch, s)).data).toBe(
            versions
              .slice(1)
              .map((v) => v.data)
              .join(''),
          )
        }
      } finally {
        await a.close()
        await b.close()
        rmSync(dir, { recursive: true, force: true })
      }
    },
  )
})

describe('durability', () => {
  test('changes survive a restart: the message, its versions and history', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-mutable-restart-'))
    try {
      const ch = fresh()
      let s: string
      let v: string
      const first = await createTestGateway({ dataDir: dir })
      try {
        await mutableNamespace(first)
        s = await publish(first, ch, 'draft')
        await change(first, ch, s, { action: 1, data: 'final' })
        v = await change(first, ch, s, { action: 5, data: '!' })
      } finally {
        await first.close()
      }
      const second = await createTestGateway({ dataDir: dir })
      try {
        expect(await getMessage(second, ch, s)).toMatchObject({ serial: s, data: 'final!', version: { serial: v } })
        expect((await versionsOf(second, ch, s)).map((m) => m.data)).toEqual(['draft', 'final', '!'])
        const history = (await (await second.request(path(ch))).json()) as Record<string, any>[]
        expect(history.map((m) => [m.serial, m.data])).toEqual([[s, 'final!']])
        // and changes go on from there
        await change(second, ch, s, { action: 5, data: '?' })
        expect((await getMessage(second, ch, s)).data).toBe('final!?')
      } finally {
        await second.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
