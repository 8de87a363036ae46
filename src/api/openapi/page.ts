/**
 * The API browser (Swagger UI): its script and style come from this server (`/openapi/assets/`),
 * so the page works without internet. "Authorize" takes the API key (Basic), a token (Bearer) or
 * the management access token; "Try it out" then sends real requests to this server.
 */
export const uiPage = (title: string) => `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${title}</title>
  <link rel="stylesheet" href="/openapi/assets/swagger-ui.css" />
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
  </script>
</body>
</html>
`
