"""``POST /v1/games`` with ``"winnable": true``: a seed from the variant's pool of
proved-winnable seeds (filled by the real worker process on the tests' Redis), or found
by the creation itself when the pool is empty, else 422 ``no_winnable_deal``; each seed
dealt once, and as secret as any seed the server chooses."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
import redis

from service.engine import get_variant
from service.engine.search import Outcome, solve
from service.storage import keys
from service.storage.solver import SolverStore
from tests.api.support import auth, create, make_app, stored
from tests.api.test_secrets import windows
from tests.solver_worker import WorkerProcess, wait_for

POOLED = "salic-law"


@pytest.fixture(scope="module")
def worker(redis_server, tmp_path_factory):
    """The worker, filling a pool of three Salic Law seeds (each test starts with an empty
    Redis: the worker fills it again within a second or two)."""
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    with WorkerProcess(redis_server.url, log, WINNABLE_POOL=f"{POOLED}=3",
                       WINNABLE_DEAL_SECONDS="1") as process:
        yield process


def pool(redis_db, variant: str = POOLED) -> set[int]:
    return {int(seed) for seed in redis_db.smembers(keys.pool(variant))}


def filled(redis_db, count: int) -> set[int]:
    return wait_for(lambda: len(pool(redis_db)) >= count and pool(redis_db), seconds=60,
                    what=f"{count} seeds in the pool", step=0.1)


def proved_winnable(variant: str, seed: int) -> bool:
    return solve(variant, seed, max_seconds=5).result == Outcome.WON


def test_a_winnable_deal_is_a_seed_of_the_pool_dealt_once(worker, client, redis_db):
    # The pool full, so that the worker adds no seed between this look and the deal.
    before = filled(redis_db, 3)
    game, _token, response = create(client, POOLED, winnable=True)
    assert response.status_code == 201
    assert (game["winnable"], game["seed"], game["salt"]) == (True, None, None)
    version, record = stored(redis_db, game["id"])
    seed = record["seed"]
    assert version == 0
    assert record["chosen"] is False
    assert record["winnable"] is True
    assert seed in before
    assert seed not in pool(redis_db)
    assert game["piles"] == client.get(f"/v1/games/{game['id']}").get_json()["piles"]
    state = get_variant(POOLED).deal(seed)
    assert [p["count"] for p in game["piles"]] == [len(cards) for cards in state.piles]
    assert proved_winnable(POOLED, seed)
    assert client.get(f"/v1/games/{game['id']}").get_json()["winnable"] is True
    # Any other game says null.
    plain, _token, _response = create(client, POOLED)
    assert plain["winnable"] is None


def test_the_seed_stays_secret_until_the_end(worker, redis_url, redis_db, log_lines):
    app = make_app(redis_url, LOG_LEVEL="DEBUG")
    client = app.test_client()
    filled(redis_db, 1)
    response = client.post("/v1/games", json={"variant": POOLED, "winnable": True},
                           headers={"Idempotency-Key": "winnable-1"})
    assert response.status_code == 201
    body = response.get_json()
    game_id, token = body["game"]["id"], body["player_token"]
    _version, record = stored(redis_db, game_id)
    seed, salt = str(record["seed"]), record["salt"]
    stock = record["state"]["piles"][get_variant(POOLED).index["stock"]]
    secrets_ = [seed, salt, *windows([stock[i:i + 2] for i in range(0, len(stock), 2)])]
    url = f"/v1/games/{game_id}"
    answers = [response, client.post("/v1/games", json={"variant": POOLED, "winnable": True},
                                     headers={"Idempotency-Key": "winnable-1"})]
    assert answers[-1].get_data() == response.get_data()  # the replay: the same game
    for path in ("", "/moves", "/history", "/hint", "/events?after=0", "/analysis"):
        answers.append(client.get(url + path))
    answers.append(client.get(url, headers={"If-None-Match": '"0"'}))
    answers.append(client.post(url + "/moves", json={"type": "move", "from": "stock",
                                                    "to": "king-1"}, headers=auth(token)))
    answers.append(client.post(url + "/moves", json={"type": "deal"},
                               headers=auth("A" * 43)))
    answers.append(client.post(url + "/moves", json={"type": "deal"},
                               headers=auth(token, If_Match='"7"')))
    answers.append(client.post(url + "/moves", json={"type": "deal"}, headers=auth(token)))
    assert [a.status_code for a in answers] == [201, 201, 200, 200, 200, 200, 200, 409, 304,
                                                 422, 403, 412, 200]
    assert answers[7].get_json()["code"] == "game_not_over"
    for answer in answers:
        text = answer.get_data(as_text=True)
        headers = "\n".join(f"{name}: {value}" for name, value in answer.headers.items())
        assert [s for s in secrets_ if s in text or s in headers] == [], answer.request.path
    assert [line for line in log_lines.lines if seed in line or salt in line] == []
    ended = client.post(url + "/moves", json={"type": "resign"}, headers=auth(token))
    assert ended.get_json()["game"]["seed"] == int(seed)
    assert ended.get_json()["game"]["winnable"] is True
    # The worker never logs a seed either.
    assert [line for line in worker.log.read_text().splitlines() if seed in line] == []
    app.services.backend.close()
    assert 500 not in app.statuses


def test_the_pool_never_deals_a_seed_twice(worker, redis_url, redis_db):
    app = make_app(redis_url, WINNABLE_SEARCH_SECONDS=30)  # in case the pool runs dry
    filled(redis_db, 3)
    seeds, statuses, errors = [], [], []

    def deal():
        try:
            response = app.test_client().post("/v1/games",
                                              json={"variant": POOLED, "winnable": True})
            statuses.append(response.status_code)
            seeds.append(stored(redis_db, response.get_json()["game"]["id"])[1]["seed"])
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=deal) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert statuses == [201] * 3
    assert len(set(seeds)) == 3
    assert not set(seeds) & pool(redis_db)
    app.services.backend.close()


def own_database(redis_url: str, number: int) -> tuple[str, redis.Redis]:
    """A database of the session's Redis for the test alone, emptied: no worker of this
    module reads or fills it (a worker still running from an earlier test takes a seed
    of a pool for the day's deal, and writes the day's keys)."""
    url = redis_url.rsplit("/", 1)[0] + f"/{number}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    return url, client


def test_a_pool_pops_each_seed_once_under_concurrency(redis_url, clean_redis):
    _url, redis_db = own_database(redis_url, 4)
    store = SolverStore(SimpleNamespace(client=redis_db))
    redis_db.sadd(keys.pool("clock"), *range(300))
    taken: list[list[int]] = [[] for _ in range(6)]

    def drain(mine):
        while (seed := store.take_seed("clock")) is not None:
            mine.append(seed)

    threads = [threading.Thread(target=drain, args=(mine,)) for mine in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    every = [seed for mine in taken for seed in mine]
    assert sorted(every) == list(range(300))
    assert redis_db.exists(keys.pool("clock")) == 0
    redis_db.close()


def test_with_an_empty_pool_the_creation_searches_itself(redis_url, clean_redis):
    # A database of its own, whose pool no worker fills.
    url_1 = redis_url.rsplit("/", 1)[0] + "/1"
    app = make_app(url_1, WINNABLE_SEARCH_SECONDS=30)
    redis_db = redis.Redis.from_url(url_1)
    assert pool(redis_db) == set()
    game, _token, _response = create(app.test_client(), POOLED, winnable=True)
    seed = stored(redis_db, game["id"])[1]["seed"]
    assert game["winnable"] is True
    assert game["seed"] is None
    assert proved_winnable(POOLED, seed)
    assert redis_db.keys("pool:*") == []
    redis_db.close()
    app.services.backend.close()


def test_four_corners_answers_no_winnable_deal_when_none_is_found_in_budget(redis_url,
                                                                           clean_redis):
    url, redis_db = own_database(redis_url, 5)
    app = make_app(url, WINNABLE_SEARCH_SECONDS=0.2, WINNABLE_DEAL_POSITIONS=2000)
    client = app.test_client()

    def stored_state():
        return {key: redis_db.dump(key) for key in redis_db.keys("*")}

    before = stored_state()
    started = time.monotonic()
    response = client.post("/v1/games", json={"variant": "four-corners", "winnable": True},
                           headers={"Idempotency-Key": "four-corners-1"})
    took = time.monotonic() - started
    assert response.status_code == 422
    problem = response.get_json()
    assert problem["code"] == "no_winnable_deal"
    assert problem["type"] == "urn:patience:problem:no_winnable_deal"
    assert "Four Corners" in problem["detail"]
    assert took < 0.2 + 1.5  # the budget, and one deal's last stretch of search
    assert stored_state() == before  # no game, no counter, no idempotency record
    app.services.backend.close()
    redis_db.close()


@pytest.mark.parametrize("body", [
    {"variant": "clock", "winnable": True, "seed": 7},
    {"variant": "clock", "winnable": True, "seed": 0},
    {"variant": "clock", "winnable": 1},
    {"variant": "clock", "winnable": "true"},
    {"variant": "clock", "winnable": None},
])
def test_winnable_is_true_or_false_and_never_with_a_seed(client, redis_db, body):
    response = client.post("/v1/games", json=body)
    assert response.status_code == 400
    problem = response.get_json()
    assert problem["code"] == "invalid_request"
    assert list(problem["errors"]) == ["winnable"]
    assert redis_db.keys("game:*") == []


def test_winnable_false_is_an_ordinary_game(client):
    game, _token, _response = create(client, "clock", seed=7, winnable=False)
    assert (game["seed"], game["winnable"]) == (7, None)


def test_a_pool_that_never_fills_keeps_no_other_waiting(redis_url, clean_redis, tmp_path):
    # Four Corners first, with searches too short to win one of its deals: Salic Law's
    # pool fills all the same, the next search going to the short pool whose seeds have
    # cost the least CPU.
    url_2 = redis_url.rsplit("/", 1)[0] + "/2"
    with redis.Redis.from_url(url_2) as db_2, \
            WorkerProcess(url_2, tmp_path / "worker.log", WINNABLE_DEAL_SECONDS="0.2",
                          WINNABLE_DEAL_POSITIONS="5000",
                          WINNABLE_POOL=f"four-corners=1,{POOLED}=2"):
        wait_for(lambda: db_2.scard(keys.pool(POOLED)) == 2, seconds=30,
                 what="the Salic Law pool", step=0.1)
        assert db_2.scard(keys.pool("four-corners")) == 0
