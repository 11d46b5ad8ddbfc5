"""The API rendered for people: ``GET /docs``, Swagger UI over ``/v1/openapi.yaml``.

Every asset of the page is served from this server under ``/docs/...``: nothing is
loaded from the internet (``validatorUrl`` is off, which would otherwise fetch a badge
from swagger.io), and a Content-Security-Policy says so to the browser.

The Swagger UI files come from the PyPI package ``flask-swagger-ui`` (its ``dist/``
folder, Swagger UI 5.x); only the static files are used, not its blueprint.  The package
``swagger-ui-bundle`` was the first choice but ships Swagger UI 4.15, which refuses to
render an OpenAPI 3.1 document ("does not specify a valid version field").
"""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

from flask import Blueprint, Response, abort, request, send_from_directory, url_for

#: Where the document is served (service.api.meta).
SPEC_URL = "/v1/openapi.yaml"

#: The Swagger UI distribution shipped by the ``flask-swagger-ui`` package.
SWAGGER_UI_DIR = Path(str(importlib.resources.files("flask_swagger_ui") / "dist"))

#: The only files served under /docs/, with their content types.
ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
}
INIT_SCRIPT = "docs-init.js"

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

bp = Blueprint("docs", __name__)

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Patience Server API</title>
  <link rel="stylesheet" href="{css}">
  <link rel="icon" type="image/png" href="{icon32}" sizes="32x32">
  <link rel="icon" type="image/png" href="{icon16}" sizes="16x16">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{bundle}"></script>
  <script src="{preset}"></script>
  <script src="{init}"></script>
</body>
</html>
"""

_INIT = """window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: %s,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout"
  });
});
"""


def _headers(response: Response) -> Response:
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@bp.get("/docs")
def index():
    def asset(name: str) -> str:
        return url_for("docs.asset", asset=name)

    page = _PAGE.format(css=asset("swagger-ui.css"), icon32=asset("favicon-32x32.png"),
                        icon16=asset("favicon-16x16.png"), bundle=asset("swagger-ui-bundle.js"),
                        preset=asset("swagger-ui-standalone-preset.js"), init=asset(INIT_SCRIPT))
    response = Response(page, mimetype="text/html")
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["Cache-Control"] = "no-cache"
    return _headers(response)


# One path segment, as openapi.yaml documents ``/docs/{asset}``: ``/docs/a/b`` is no
# resource at all (404 for every method, not 405 for all but GET).
@bp.get("/docs/<asset>")
def asset(asset: str):
    if asset == INIT_SCRIPT:
        script = _INIT % json.dumps(request.script_root + SPEC_URL)
        response = Response(script, mimetype="text/javascript")
        response.headers["Cache-Control"] = "no-cache"
        return _headers(response)
    content_type = ASSETS.get(asset)
    if content_type is None:
        abort(404)
    response = send_from_directory(SWAGGER_UI_DIR, asset, mimetype=content_type,
                                   conditional=True, etag=True, max_age=3600)
    response.headers["Content-Type"] = content_type
    return _headers(response)
