"""Concurrency through a real gunicorn of four workers: threads of this process and
separate client processes, released at the same moment, write to one game.

- racing If-Match writes: exactly one wins, every other one is 412 and changed nothing;
- racing writes without If-Match: none lost, none applied twice, and the final state is
  the replay of the history from the deal of the seed revealed by resigning;
- racing undo and move: the same, with the undos counted;
- racing retries of one write with one Idempotency-Key (and of one create): applied
  once, every retry answered with the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from service.engine import Move, get_variant
from service.storage import keys
from tests.e2e.support import Gunicorn, in_processes

THREADS = 8
PROCESSES = 4


@pytest.fixture(scope="module")
def server(redis_server, tmp_path_factory):
    log = tmp_path_factory.mktemp("concurrency") / "gunicorn.log"
    with Gunicorn(redis_server.url, log, WEB_CONCURRENCY="4", GUNICORN_THREADS="4") as server:
        yield server


@pytest.fixture
def game(server, clean_redis):
    def create(variant="salic-law", **fields):
        created = requests.post(f"{server.base}/v1/games", json={"variant": variant, **fields},
                                timeout=10)
        assert created.status_code == 201
        body = created.json()
        token = {"Authorization": f"Bearer {body['player_token']}"}
        return f"/v1/games/{body['game']['id']}", token

    return create


def race(server, plan: list[tuple], threads: int = THREADS, processes: int = PROCESSES):
    """Each of ``threads`` threads (its own connection) and ``processes`` processes
    sends the requests of ``plan`` in order, all starting together; returns every
    answer as (status, body text, ETag)."""
    barrier = threading.Barrier(threads + 1)

    def thread_plan(_):
        answers = []
        with requests.Session() as session:
            session.get(f"{server.base}/healthz", timeout=10)  # connected before the start
            barrier.wait()
            for method, path, body, headers in plan:
                response = session.request(method, server.base + path, json=body,
                                           headers=headers, timeout=30)
                answers.append([response.status_code, response.text,
                                response.headers.get("ETag")])
        return answers

    with ThreadPoolExecutor(threads + 1) as pool:
        futures = [pool.submit(thread_plan, i) for i in range(threads)]
        from_processes = pool.submit(in_processes, server, [plan] * processes)
        barrier.wait()
        results = [future.result() for future in futures] + from_processes.result()
    return [answer for answers in results for answer in answers]


def _json(text: str) -> dict:
    return json.loads(text)


def _replays_to_the_end(server, url: str, headers: dict, variant: str) -> tuple[list, dict]:
    """Resign, check the commitment, and replay the history from the deal of the revealed
    seed: it must give the final table.  Returns (history, final game)."""
    resigned = requests.post(f"{server.base}{url}/moves", json={"type": "resign"},
                             headers=headers, timeout=10)
    assert resigned.status_code == 200
    final = resigned.json()["game"]
    commitment = hashlib.sha256(f"{variant}:{final['seed']}:{final['salt']}".encode())
    assert commitment.hexdigest() == final["deal_commitment"]
    history = requests.get(f"{server.base}{url}/history", timeout=10).json()["moves"]
    state = get_variant(variant).deal(final["seed"])
    for entry in history:
        state, step = state.apply(Move.from_dict(entry["move"]))
        assert [e.to_dict() for e in step.events] == entry["events"]
    shown = {p["id"]: p["cards"] for p in final["piles"]}
    assert shown == {spec.id: [] if spec.kind == "stock" else [str(c) for c in cards]
                     for spec, cards in zip(state.variant.layout, state.piles, strict=True)}
    assert state.status == "resigned"
    return history, final


def test_racing_if_match_writes_one_wins(server, game, clean_redis):
    url, token = game()
    answers = race(server, [("POST", f"{url}/moves", {"type": "deal"},
                             {**token, "If-Match": '"0"'})])
    assert sorted(a[0] for a in answers) == [200] + [412] * (THREADS + PROCESSES - 1)
    winner = next(_json(a[1]) for a in answers if a[0] == 200)
    for status, text, _etag in answers:
        if status == 412:
            assert _json(text)["code"] == "version_mismatch"
    assert winner["game"]["version"] == 1
    shown = requests.get(f"{server.base}{url}", timeout=10).json()
    assert shown == winner["game"]
    history = requests.get(f"{server.base}{url}/history", timeout=10).json()["moves"]
    assert history == [{"version": 1, "move": {"type": "deal"}, "events": winner["events"]}]


def test_racing_writes_without_if_match_lose_nothing_and_apply_nothing_twice(
        server, game, clean_redis):
    url, token = game()  # a server-chosen seed, revealed at the end
    answers = race(server, [("POST", f"{url}/moves", {"type": "deal"}, token)] * 5)
    applied = [(_json(text), etag) for status, text, etag in answers if status == 200]
    for status, text, _etag in answers:
        assert status in (200, 409), text
        if status == 409:
            assert _json(text)["code"] == "write_conflict"
    assert len(applied) >= len(answers) // 2
    versions = sorted(body["game"]["version"] for body, _etag in applied)
    assert versions == list(range(1, len(applied) + 1))  # none lost, none twice
    assert all(etag == f'"{body["game"]["version"]}"' for body, etag in applied)
    history, final = _replays_to_the_end(server, url, token, "salic-law")
    assert [entry["version"] for entry in history] == [*versions, len(applied) + 1]
    by_version = {body["game"]["version"]: body["events"] for body, _etag in applied}
    assert [entry["events"] for entry in history[:-1]] == [by_version[v] for v in versions]
    assert final["version"] == final["moves_made"] == len(applied) + 1
    dealt = [e["card"] for body, _etag in applied for e in body["events"]]
    assert len(dealt) == len(applied)  # one card per deal, 103 - n left in the stock
    assert next(p["count"] for p in final["piles"] if p["id"] == "stock") == 103 - len(applied)


def test_racing_undo_and_move(server, game, clean_redis):
    url, token = game(undo="full")
    for _ in range(12):
        assert requests.post(f"{server.base}{url}/moves", json={"type": "deal"},
                             headers=token, timeout=10).status_code == 200
    plan = [("POST", f"{url}/undo", None, token),
            ("POST", f"{url}/moves", {"type": "deal"}, token)] * 2
    answers = race(server, plan)
    undone = dealt = 0
    for status, text, _etag in answers:
        assert status in (200, 409), text
        if status == 409:
            assert _json(text)["code"] in ("write_conflict", "nothing_to_undo")
            continue
        body = _json(text)
        if body["events"] and body["events"][0]["to"] == "stock":
            undone += 1
        else:
            dealt += 1
    versions = sorted(_json(text)["game"]["version"] for status, text, _ in answers
                      if status == 200)
    assert versions == list(range(13, 13 + undone + dealt))
    shown = requests.get(f"{server.base}{url}", timeout=10).json()
    assert shown["version"] == 12 + undone + dealt
    assert shown["undos"] == undone
    assert shown["moves_made"] == 12 + dealt - undone
    history, _final = _replays_to_the_end(server, url, token, "salic-law")
    assert len(history) == 12 + dealt - undone + 1


def test_racing_retries_of_one_keyed_write_apply_it_once(server, game, clean_redis):
    url, token = game()
    keyed = {**token, "Idempotency-Key": "retry-me"}
    answers = race(server, [("POST", f"{url}/moves", {"type": "deal"}, keyed)] * 2)
    assert {a[0] for a in answers} == {200}
    assert len({a[1] for a in answers}) == 1  # the same bytes for every retry
    assert {a[2] for a in answers} == {'"1"'}
    history = requests.get(f"{server.base}{url}/history", timeout=10).json()["moves"]
    assert len(history) == 1
    assert history[0]["events"] == _json(answers[0][1])["events"]


def test_racing_retries_of_one_keyed_create_make_one_game(server, clean_redis):
    answers = race(server, [("POST", "/v1/games", {"variant": "four-corners"},
                             {"Idempotency-Key": "create-once"})])
    assert {a[0] for a in answers} == {201}
    assert len({a[1] for a in answers}) == 1
    games = [key for key in clean_redis.keys("game:*") if clean_redis.type(key) == b"hash"]
    assert len(games) == 1
    created = _json(answers[0][1])
    assert games == [keys.game(created["game"]["id"]).encode()]
