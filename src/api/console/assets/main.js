// The console's entry point: the key form, the panels, and their refresh. Panels refresh on a
// timer only while the tab is visible, so a forgotten console costs the gateway nothing.
import { credentialOf, forgetKey, Gateway, savedKey, saveKey } from './api.js'
import { ChannelView } from './channel.js'
import { ChannelsView } from './channels.js'
import { byId, status } from './dom.js'
import { refreshHealth } from './health.js'
import { StatsView } from './stats.js'

const EVERY = { health: 5000, channels: 5000, stats: 30000 }

const channel = new ChannelView(() => channels.refresh())
const channels = new ChannelsView((name) => channel.subscribe(name))
const stats = new StatsView()
let gateway

/** Every panel uses `g` (a Gateway, or undefined to disconnect). */
function use(g) {
  gateway = g
  channel.use(g)
  channels.use(g)
  stats.use(g)
  byId('workspace').hidden = !g
}

async function connect(text, remember) {
  const out = byId('key-status')
  const credential = credentialOf(text)
  const g = new Gateway(credential)
  status(out, 'checking…')
  try {
    await g.request('GET', '/channels', { query: { limit: 1 } })
  } catch (e) {
    // refused credentials stop here; a key that may not list channels (403) can still do the rest
    if (e.status !== 403) {
      use(undefined)
      return status(out, `not connected: ${e.message}`, 'error')
    }
  }
  if (remember) saveKey(text)
  else forgetKey()
  const who = credential.kind === 'key' ? `key ${credential.keyName}` : 'a token'
  status(out, `connected with ${who}`, 'ok')
  use(g)
  channels.refresh()
  stats.refresh()
}

byId('key-form').addEventListener('submit', (e) => {
  e.preventDefault()
  connect(byId('key').value, byId('remember').checked)
})
byId('forget').addEventListener('click', () => {
  forgetKey()
  byId('key').value = ''
  byId('remember').checked = false
  use(undefined)
  status(byId('key-status'), 'key forgotten')
})

/**
 * Runs `fn` every `ms` while the page is visible (and when it becomes visible again), never two
 * at once: a slow gateway gets no pile of requests from a console left open.
 */
function every(ms, fn) {
  let running = false
  const run = async () => {
    if (running || document.visibilityState !== 'visible') return
    running = true
    try {
      await fn()
    } finally {
      running = false
    }
  }
  setInterval(run, ms)
  document.addEventListener('visibilitychange', run)
}

every(EVERY.health, refreshHealth)
every(EVERY.channels, () => gateway && channels.refresh())
every(EVERY.stats, () => gateway && stats.refresh())
refreshHealth()

const saved = savedKey()
if (saved) {
  byId('key').value = saved
  byId('remember').checked = true
  connect(saved, true)
}
