"""The process's events hub (service/live/hub.py) with attached followers, in-process on the
harness's Redis: the hub writes to the followers' sockets itself, never waits on one, and
cuts off a follower whose client does not read once SSE_BACKLOG_BYTES are waiting."""

from __future__ import annotations

import socket
import threading
import time

from bench.walks import long_walks
from service.live.channel import GameChannel
from service.live.wires.sse import SSE
from tests.api.support import auth, make_app
from tests.sse import events_only, messages


def _reader(sock: socket.socket, into: list) -> threading.Thread:
    def run():
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            into.append(data)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_client_that_reads_nothing_is_cut_off_and_the_others_get_everything(redis_url,
                                                                             clean_redis):
    app = make_app(redis_url, SSE_HEARTBEAT_SECONDS=5, SSE_BACKLOG_BYTES=2048)
    hub = app.services.events_feed.hub
    client = app.test_client()
    walk = long_walks(["clock"], 1, 80, first_seed=1000)[0]
    created = client.post("/v1/games", json={"variant": "clock", "seed": walk.seed})
    game_id, token = created.get_json()["game"]["id"], created.get_json()["player_token"]

    ended = []
    pairs = []
    for name in ("stuck", "reader"):
        server_end, client_end = socket.socketpair()
        server_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        client_end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        server_end.setblocking(False)
        follower = hub.follow(GameChannel(app.services.store, game_id), 60)
        follower.attach(server_end, chunked=False, sent=0, wire=SSE,
                        on_end=lambda name=name, follower=follower: (ended.append(name),
                                                                     follower.leave()))
        pairs.append((follower, client_end))
    (stuck, stuck_client), (_reading, reader_client) = pairs
    received: list[bytes] = []
    reader = _reader(reader_client, received)

    for version, move in enumerate(walk.moves):
        answer = client.post(f"/v1/games/{game_id}/moves", json=move,
                             headers={**auth(token), "If-Match": f'"{version}"'})
        assert answer.status_code == 200, answer.get_data(as_text=True)

    deadline = time.monotonic() + 20
    while sum(block.count(b"\nevent: ") for block in received) < len(walk.moves):
        assert time.monotonic() < deadline, "the reading follower was held up"
        time.sleep(0.05)
    ids = [int(m.id) for m in events_only(messages(received))]
    assert ids == list(range(1, len(walk.moves) + 1))

    # The client that read nothing was cut off once 2 KiB waited for it, and its
    # follower keeps no bytes.
    assert ended == ["stuck"]
    assert stuck.closed
    assert stuck.pending_bytes == 0
    stuck_client.settimeout(5)
    got = b""
    while chunk := stuck_client.recv(65536):
        got += chunk
    stuck_ids = [int(m.id) for m in events_only(messages([got]))]
    assert 0 < len(stuck_ids) < len(walk.moves)
    assert stuck_ids == list(range(1, len(stuck_ids) + 1))  # in order, a prefix: resumable

    hub.close_followers()
    reader.join(5)
    assert ended == ["stuck", "reader"]
    for _follower, client_end in pairs:
        client_end.close()
    app.services.backend.close()
