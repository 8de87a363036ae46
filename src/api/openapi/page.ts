/**
 * The API browser (Swagger UI): its script and style come from this server (`/openapi/assets/`),
 * so the page works without internet (its icon too: no request for `/favicon.ico`). "Authorize" takes the API key (Basic), a token (Bearer) or
 * the management access token; "Try it out" then sends real requests to this server.
 */
export const uiPage = (title: string) => `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${title}</title>
  <link rel="stylesheet" href="/openapi/assets/swagger-ui.css" />
  <link rel="icon" type="image/png" href="/openapi/assets/favicon-32x32.png" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/openapi/assets/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: '/openapi/json',
      dom_id: '#swagger-ui',
      deepLinking: true,
      persistAuthorization: true,
      docExpansion: 'list',
      tryItOutEnabled: false,
      defaultModelsExpandDepth: 0,
    })
    // "Authorize" lists every scheme and Swagger UI focuses the last field, scrolling the dialog to
    // its end: open it at the top, with the first field focused instead
    new MutationObserver(() => {
      const dialog = document.querySelector('.modal-ux-content')
      if (!dialog || dialog.dataset.opened) return
      dialog.dataset.opened = 'yes'
      dialog.querySelector('input')?.focus({ preventScroll: true })
      dialog.scrollTop = 0
    }).observe(document.body, { childList: true, subtree: true })
  </script>
</body>
</html>
`
