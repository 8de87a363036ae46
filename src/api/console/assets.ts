// The console's page, script modules and style: imported as files, so that `bun build --compile`
// embeds them in the single binary. Plain HTML, CSS and ES modules written for the browser as they
// are: nothing is built, bundled or fetched from elsewhere.
// Bun's types take any .html import for a full-stack bundle: with type 'file' it is the path too
import page from './assets/console.html' with { type: 'file' }
// @ts-expect-error: a file import (Bun gives its path), not a module
import css from './assets/console.css' with { type: 'file' }
// @ts-expect-error: a file import
import main from './assets/main.js' with { type: 'file' }
// @ts-expect-error: a file import
import api from './assets/api.js' with { type: 'file' }
// @ts-expect-error: a file import
import dom from './assets/dom.js' with { type: 'file' }
// @ts-expect-error: a file import
import stream from './assets/stream.js' with { type: 'file' }
// @ts-expect-error: a file import
import channels from './assets/channels.js' with { type: 'file' }
// @ts-expect-error: a file import
import channel from './assets/channel.js' with { type: 'file' }
// @ts-expect-error: a file import
import stats from './assets/stats.js' with { type: 'file' }
// @ts-expect-error: a file import
import chart from './assets/chart.js' with { type: 'file' }
// @ts-expect-error: a file import
import health from './assets/health.js' with { type: 'file' }

const JS = 'text/javascript; charset=utf-8'

/** The page's file path. */
export const PAGE = page as unknown as string

/** Asset name (as the page and its modules link it) -> file path and content type. */
export const CONSOLE_ASSETS: Record<string, { path: string; type: string }> = {
  'console.css': { path: css as string, type: 'text/css; charset=utf-8' },
  'main.js': { path: main as string, type: JS },
  'api.js': { path: api as string, type: JS },
  'dom.js': { path: dom as string, type: JS },
  'stream.js': { path: stream as string, type: JS },
  'channels.js': { path: channels as string, type: JS },
  'channel.js': { path: channel as string, type: JS },
  'stats.js': { path: stats as string, type: JS },
  'chart.js': { path: chart as string, type: JS },
  'health.js': { path: health as string, type: JS },
}
