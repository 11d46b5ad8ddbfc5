"""The reference web client: ``GET /`` (the page) and ``GET /web/<asset>`` (its files).

The client is a handful of static files in ``service/web/`` (an ES module app, no build
step, nothing loaded from the internet) that plays through the public ``/v1`` API only,
like any outside frontend.  The files carry no version in their names, so every response
says ``Cache-Control: no-cache``: the browser keeps its copy but revalidates it (ETag /
Last-Modified, answered 304) before each use, so a deployment is seen at once.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, abort, send_from_directory

WEB_DIR = Path(__file__).resolve().parent.parent / "web"

#: The only file types served, with their content types (not guessed from the system's
#: mime.types, which differ between machines; an ES module needs a JavaScript type).
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": "application/json",
}

#: The page loads nothing but its own files and talks to nothing but its own origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

bp = Blueprint("web", __name__)


def _send(name: str):
    suffix = Path(name).suffix.lower()
    if suffix not in CONTENT_TYPES or name.startswith("."):
        abort(404)
    # One file name (no "/"); send_from_directory also refuses any path leaving WEB_DIR.
    response = send_from_directory(WEB_DIR, name, mimetype=CONTENT_TYPES[suffix], max_age=0,
                                   conditional=True, etag=True)
    response.headers["Content-Type"] = CONTENT_TYPES[suffix]
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    if suffix == ".html":
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response


@bp.get("/")
def index():
    return _send("index.html")


@bp.get("/web/<asset>")
def web_asset(asset: str):
    return _send(asset)
