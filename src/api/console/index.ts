import { Elysia, t } from 'elysia'
import { GatewayError } from '../../errors'
import { CONSOLE_ASSETS, PAGE } from './assets'

/**
 * Headers of everything the console serves. The page holds the pasted key while it is open, so
 * no other origin may frame it (clickjacking) and it may run only its own scripts and talk only
 * to this gateway: no inline script or style, nothing from another origin, no plugins, forms that
 * submit nowhere. Trusted Types make an HTML string sink (innerHTML and the like) throw, so
 * message data can only ever be shown as text.
 */
export const CONSOLE_HEADERS: Record<string, string> = {
  'content-security-policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join('; '),
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  // small files that change with the gateway's version: revalidated, never served stale
  'cache-control': 'no-cache',
}

const html = { ...CONSOLE_HEADERS, 'content-type': 'text/html; charset=utf-8' }

/**
 * The web console (`GET /console` and its assets under `/console/assets/`), unless `enabled` is
 * false (CONSOLE=off: the paths are then unknown, 404). It is a static page: everything it shows
 * comes from the browser calling this gateway's public interfaces with the key the user pastes,
 * so serving it grants nothing that key does not already grant.
 */
export const consoleRoutes = (enabled: boolean) => {
  const plugin = new Elysia({ name: 'console', normalize: false, detail: { hide: true } })
  if (!enabled) return plugin
  return plugin
    .get('/console', () => new Response(Bun.file(PAGE), { headers: html }))
    .get(
      '/console/assets/:file',
      ({ params }) => {
        const asset = CONSOLE_ASSETS[params.file]
        if (!asset) throw new GatewayError(40400, 'Not found: no such asset')
        return new Response(Bun.file(asset.path), { headers: { ...CONSOLE_HEADERS, 'content-type': asset.type } })
      },
      { params: t.Object({ file: t.String() }) },
    )
}
