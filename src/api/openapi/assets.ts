// The API browser's assets, from the swagger-ui-dist npm package: imported as files, so that
// `bun build --compile` embeds them in the single binary and nothing is fetched from a CDN.
// @ts-expect-error: a file import (Bun gives its path), not a module
import bundle from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }
// @ts-expect-error: a file import (Bun gives its path), not a module
import css from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' }
// @ts-expect-error: a file import (Bun gives its path), not a module
import favicon from 'swagger-ui-dist/favicon-32x32.png' with { type: 'file' }

/** Asset name (as the page links it) -> file path and content type. */
export const UI_ASSETS: Record<string, { path: string; type: string }> = {
  'swagger-ui-bundle.js': { path: bundle as string, type: 'application/javascript; charset=utf-8' },
  'swagger-ui.css': { path: css as string, type: 'text/css; charset=utf-8' },
  'favicon-32x32.png': { path: favicon as string, type: 'image/png' },
}
