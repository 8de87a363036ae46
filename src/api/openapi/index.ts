import { Elysia, t, type AnyElysia } from 'elysia'
import { GatewayError } from '../../errors'
import { UI_ASSETS } from './assets'
import { buildDocument } from './document'
import { uiPage } from './page'

const INFO = {
  title: 'Messaging gateway',
  version: '1',
  description:
    'Channel REST, event stream (SSE), chat, LiveObjects, push admin and management (/v1) interfaces. ' +
    'Authorize with the API key (Basic: `appId.keyId` / secret), a token (Bearer) or, for /v1, a management access token.',
}

/**
 * `GET /openapi` (the API browser, assets served from here: it works offline and from the single
 * binary) and `GET /openapi/json` (the document, built once from `app`'s routes on first request).
 */
export const openapiRoutes = (app: () => AnyElysia) => {
  let document: ReturnType<typeof buildDocument> | undefined
  const page = uiPage(INFO.title)
  return new Elysia({ name: 'openapi', normalize: false, detail: { hide: true } })
    .get('/openapi', () => new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8' } }))
    .get('/openapi/json', () => Response.json((document ??= buildDocument(app(), INFO))))
    .get(
      '/openapi/assets/:file',
      ({ params }) => {
        const asset = UI_ASSETS[params.file]
        if (!asset) throw new GatewayError(40400, 'Not found: no such asset')
        return new Response(Bun.file(asset.path), {
          headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=86400' },
        })
      },
      { params: t.Object({ file: t.String() }) },
    )
}
