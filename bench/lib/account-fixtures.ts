/**
 * K separate accounts for the rate-limit scenario. The gateway has no API that creates an
 * account: the management API (/v1) only sees the account of its access token, and sandbox
 * provisioning (POST /apps) puts every app in the first account. What it does have is its
 * bootstrap: started with BOOTSTRAP_ACCOUNT_ID, BOOTSTRAP_KEY and BOOTSTRAP_ACCESS_TOKEN against an
 * existing DATA_DIR, it adds that account, app, root key and access token if they are missing.
 * So the fixture starts the gateway once per account on one prepared DATA_DIR (the first alone,
 * then several at a time: SQLite serialises the writes), each start stopped as soon as it is ready.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { onExit } from './processes'
import { startGateway } from './targets'

export interface AccountFixture {
  accountId: string
  appId: string
  /** Root key `appId.keyId:secret` of the account's app. */
  key: string
  /** Management access token of the account (GET/PATCH /v1/accounts/{id}/limits). */
  token: string
}

export interface AccountsDataDir {
  dir: string
  accounts: AccountFixture[]
  remove(): void
}

const PARALLEL = 6

export function accountFixture(i: number): AccountFixture {
  const n = String(i).padStart(3, '0')
  return {
    accountId: `bench-acct-${n}`,
    appId: `benchapp${n}`,
    key: `benchapp${n}.key${n}:secret-${n}-not-for-production`,
    token: `bench-token-${n}-not-for-production`,
  }
}

/** A fresh DATA_DIR holding `k` accounts, each with one app, a root key and an access token. */
export async function prepareAccounts(k: number, logDir: string): Promise<AccountsDataDir> {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-accounts-'))
  const unregister = onExit(() => rmSync(dir, { recursive: true, force: true }))
  const remove = () => {
    rmSync(dir, { recursive: true, force: true })
    unregister()
  }
  const accounts = Array.from({ length: k }, (_, i) => accountFixture(i))
  const logs = join(logDir, 'bootstrap')
  mkdirSync(logs, { recursive: true })
  const create = async (a: AccountFixture, i: number) => {
    const gw = await startGateway({
      logDir: logs,
      name: `account-${i}`,
      dataDir: dir,
      env: { BOOTSTRAP_ACCOUNT_ID: a.accountId, BOOTSTRAP_KEY: a.key, BOOTSTRAP_ACCESS_TOKEN: a.token },
    })
    await gw.stop()
  }
  try {
    const t0 = performance.now()
    await create(accounts[0]!, 0)
    for (let i = 1; i < k; i += PARALLEL)
      await Promise.all(accounts.slice(i, i + PARALLEL).map((a, j) => create(a, i + j)))
    console.log(`accounts: ${k} accounts bootstrapped into ${dir} in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  } catch (e) {
    remove()
    throw e
  }
  return { dir, accounts, remove }
}
