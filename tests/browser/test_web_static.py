"""How the web client is served (no browser needed): GET / and GET /web/<name>, with their
content types and cache headers, and files that load nothing from the internet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.api.web import CONTENT_TYPES, WEB_DIR
from service.app import close_app, create_app

FILES = sorted(p.name for p in WEB_DIR.iterdir() if p.is_file())


@pytest.fixture
def client(redis_url):
    app = create_app({"TESTING": True, "REDIS_URL": redis_url, "RATELIMIT_ENABLED": False})
    yield app.test_client()
    close_app(app)


def fetch(client, path, **options):
    """GET, with the body read and the response closed (send_file holds the file open)."""
    response = client.get(path, **options)
    response.get_data()
    response.close()
    return response


def test_the_page_is_served_at_the_root(client):
    response = fetch(client, "/")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy
    assert "connect-src 'self'" in policy
    assert response.data == (WEB_DIR / "index.html").read_bytes()
    assert b'<script type="module" src="/web/app.js"></script>' in response.data


@pytest.mark.parametrize("name", FILES)
def test_every_file_is_served_with_its_type_and_revalidated(client, name):
    response = fetch(client, f"/web/{name}")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == CONTENT_TYPES[Path(name).suffix]
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.data == (WEB_DIR / name).read_bytes()
    etag = response.headers["ETag"]
    again = fetch(client, f"/web/{name}", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.data == b""


@pytest.mark.parametrize("path", ["/web/missing.js", "/web/.hidden.js", "/web/app.py",
                                  "/web/..%2Fapi%2Fweb.py", "/web/../app.py", "/web/"])
def test_nothing_else_is_served(client, path):
    response = fetch(client, path)
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"


def test_the_files_load_nothing_from_the_internet_and_call_only_the_v1_api():
    for name in FILES:
        text = _strip_comments(name, (WEB_DIR / name).read_text(encoding="utf-8"))
        if name.endswith(".svg"):
            text = text.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert not re.search(r"(https?:)?//[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+", text), name
        for loader in ("@import", "@font-face", "url("):
            assert loader not in text, (name, loader)
    scripts = {name: _strip_comments(name, (WEB_DIR / name).read_text(encoding="utf-8"))
               for name in FILES if name.endswith(".js")}
    for name, text in scripts.items():
        # ES modules of this folder, imported by relative path, and nothing else.
        for target in re.findall(r"""\bfrom\s+["']([^"']+)["']""", text):
            assert re.fullmatch(r"\./[a-z]+\.js", target), (name, target)
            assert (WEB_DIR / target[2:]).is_file(), (name, target)
        assert "import(" not in text, name
    # Every URL the client builds is in api.js (and the documented /v1 paths only).
    for name, text in scripts.items():
        if name != "api.js":
            assert "/v1/" not in text, name
    built = re.findall(r"`(/v1/[^`]*)`|\"(/v1/[^\"]*)\"", scripts["api.js"])
    paths = {a or b for a, b in built}
    allowed = re.compile(r"^/v1/(variants|games)(/\$\{enc\(id\)\}(/(moves|undo|history|hint|"
                         r"autoplay|analysis|events\?after=\$\{enc\(String\(after\)\)\}))?)?$"
                         r"|^/v1/players(/me(/stats|/games\?\$\{query\})?)?$"
                         r"|^/v1/daily(/\$\{enc\(variant\)\}/\$\{enc\(day\)\}(/events\?after=\$\{enc\(String\(after\)\)\}|/board\?\$\{query\}"
                         r"|/board/players/\$\{enc\(player\)\}\?around=\$\{enc\(String\(around\)\)\})?)?$"
                         r"|^/v1/daily/\$\{enc\(variant\)\}(/weeks/\$\{enc\(week\)\}/board|/streaks)"
                         r"(\?\$\{query\}|/players/\$\{enc\(player\)\}\?around=\$\{enc\(String\(around\)\)\})$")
    assert paths
    assert [p for p in paths if not allowed.match(p)] == []


def _strip_comments(name: str, text: str) -> str:
    if name.endswith((".js", ".css")):
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    if name.endswith(".js"):
        text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
    return text
