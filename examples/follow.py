"""Follow a Patience Server game live from Python: print every change as it happens.

    pip install httpx==0.28.1 httpx-sse==0.4.3
    python examples/follow.py http://127.0.0.1:8000 <game id> [after]

It reads ``GET /v1/games/<id>/events`` as Server-Sent Events with ``httpx-sse``, from
version ``after`` (default 0: everything since the deal).  When the stream closes while
the game goes on (the server's ``SSE_MAX_SECONDS``, a restart), it waits the ``retry:``
the server asked for and resumes with ``Last-Event-ID``, as a browser's ``EventSource``
does, so nothing is missed.  It stops at the game's ``end`` (won, lost or resigned) or
``deleted`` event, or when the server answers 204 (the client has seen the end already)
or 404 (no such game).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

import httpx
from httpx_sse import connect_sse


def follow(base_url: str, game_id: str, after: int = 0,
           on_event: Callable[[str, dict], None] | None = None) -> dict | None:
    """Call ``on_event(name, data)`` for every event of the game after version ``after``
    until it ends; return the last event's data (the final game for ``end``), or None
    when the server answers 204 or 404."""
    on_event = on_event or _print
    last, retry_seconds = after, 3.0
    timeout = httpx.Timeout(10.0, read=None)  # a stream may stay quiet between heartbeats
    with httpx.Client(base_url=base_url, timeout=timeout) as client:
        while True:
            with connect_sse(client, "GET", f"/v1/games/{game_id}/events",
                             params={"after": last},
                             headers={"Last-Event-ID": str(last)}) as source:
                status = source.response.status_code
                if status in (204, 404):
                    return None
                source.response.raise_for_status()
                for event in source.iter_sse():
                    if event.retry is not None:
                        retry_seconds = event.retry / 1000
                    if not event.data:
                        continue  # the retry: line alone
                    data = json.loads(event.data)
                    on_event(event.event, data)
                    if event.id:
                        last = int(event.id)
                    if event.event in ("end", "deleted"):
                        return data
            time.sleep(retry_seconds)  # closed while the game goes on: resume


def _print(name: str, data: dict) -> None:
    if name in ("move", "undo"):
        moved = ", ".join(f"{e['card']} {e['from']}>{e['to']}" for e in data["events"])
        print(f"v{data['version']} {data['move']['type']}: {moved or 'nothing moved'}")
    elif name in ("game", "end"):
        game = data["game"]
        print(f"v{game['version']} {name}: the game is {game['status']}")
    else:
        print(f"{name}: {json.dumps(data)}")
    sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    follow(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 0)
