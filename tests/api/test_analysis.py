"""``GET /v1/games/<id>/analysis``: refused while the game is played (409), then computed
once, in the request when the solver settles the deal at once, else by the real worker
process (202 with Retry-After meanwhile), and kept with the game."""

from __future__ import annotations

import pytest
import redis

from service.engine import WON, Move, get_variant
from service.observability import telemetry
from service.storage import keys
from tests.api.support import auth, create, make_app
from tests.solver_worker import WorkerProcess, quickly_won_seed, wait_for

VARIANT = "salic-law"


@pytest.fixture(scope="module")
def worker(redis_server, tmp_path_factory):
    """The worker, with a small analysis budget and no pool to fill."""
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    with WorkerProcess(redis_server.url, log, WINNABLE_POOL="clock=0",
                       ANALYSIS_SECONDS="2") as process:
        yield process


def resign(client, game_id, token):
    response = client.post(f"/v1/games/{game_id}/moves", json={"type": "resign"},
                           headers=auth(token))
    assert response.status_code == 200


def check_line(variant_id: str, seed: int, line: list[dict]) -> None:
    """The line is a winning line from the deal, each card move naming its card."""
    state = get_variant(variant_id).deal(seed)
    for listed in line:
        move = Move.from_dict({k: v for k, v in listed.items() if k != "card"})
        card = state.card_of(move)
        assert listed.get("card") == (None if card is None else str(card))
        state, _step = state.apply(move)
    assert state.status == WON


def test_the_analysis_waits_for_the_end(client, redis_db):
    game, token, _response = create(client, VARIANT, seed=3)
    response = client.get(f"/v1/games/{game['id']}/analysis")
    assert response.status_code == 409
    assert response.get_json()["code"] == "game_not_over"
    assert "3" not in response.get_json()["detail"]
    assert redis_db.hget(f"game:{{{game['id']}}}", "a") is None
    assert redis_db.exists(keys.analysis_claim(game["id"]), keys.ANALYSIS_JOBS) == 0
    # Unknown and deleted games: 404.
    assert client.get("/v1/games/nosuchgameatallxxxxxxx/analysis").status_code == 404
    client.delete(f"/v1/games/{game['id']}", headers=auth(token))
    assert client.get(f"/v1/games/{game['id']}/analysis").get_json()["code"] == \
        "game_not_found"


@pytest.mark.cluster
def test_a_deal_settled_at_once_is_answered_at_once_and_kept(redis_url, redis_db):
    seed = quickly_won_seed(VARIANT)
    app = make_app(redis_url, ANALYSIS_INLINE_SECONDS=10)
    client = app.test_client()
    game, token, _response = create(client, VARIANT, seed=seed)
    resign(client, game["id"], token)
    left = []  # the request's turn through the app, given back before the search
    response = client.get(f"/v1/games/{game['id']}/analysis",
                          environ_overrides={telemetry.LEAVE_TURN: lambda: left.append(1)})
    assert response.status_code == 200
    assert left == [1]
    analysis = response.get_json()
    assert analysis["winnable"] is True
    assert analysis["searched"] > 0
    assert analysis["seconds"] >= 0
    check_line(VARIANT, seed, analysis["line"])
    assert redis_db.hget(f"game:{{{game['id']}}}", "a") == response.get_data()
    assert redis_db.exists(keys.analysis_claim(game["id"]), keys.ANALYSIS_JOBS) == 0
    again = client.get(f"/v1/games/{game['id']}/analysis",
                       environ_overrides={telemetry.LEAVE_TURN: lambda: left.append(2)})
    assert again.get_data() == response.get_data()
    assert left == [1]  # a kept answer keeps its turn to its end
    # It goes with the game.
    assert client.delete(f"/v1/games/{game['id']}", headers=auth(token)).status_code == 204
    assert redis_db.exists(f"game:{{{game['id']}}}") == 0
    app.services.backend.close()
    assert 500 not in app.statuses


def test_a_long_analysis_is_computed_once_by_the_worker(worker, redis_url, redis_db):
    app = make_app(redis_url, ANALYSIS_INLINE_SECONDS=0)  # every search goes to the worker
    client = app.test_client()
    seed = quickly_won_seed(VARIANT)
    game, token, _response = create(client, VARIANT, seed=seed)
    resign(client, game["id"], token)
    url = f"/v1/games/{game['id']}/analysis"
    first = client.get(url)
    assert first.status_code == 202
    assert first.headers["Retry-After"] == "1"
    assert first.get_json() == {"status": "pending"}
    answers = [first]

    def ready():
        answers.append(client.get(url))
        return answers[-1].status_code == 200

    wait_for(ready, seconds=30, what="the analysis", step=0.2)
    pending = [a for a in answers if a.status_code == 202]
    assert all(a.headers["Retry-After"] == "1" for a in pending)
    analysis = answers[-1].get_json()
    assert analysis["winnable"] is True
    check_line(VARIANT, seed, analysis["line"])
    stored = redis_db.hget(f"game:{{{game['id']}}}", "a")
    assert stored == answers[-1].get_data() == client.get(url).get_data()
    assert redis_db.exists(keys.analysis_claim(game["id"]), keys.ANALYSIS_JOBS) == 0
    # However often it was asked for, the worker searched once.
    runs = [line for line in worker.lines()
            if line.get("message") == "analysis" and line.get("game_id") == game["id"]]
    assert [run["outcome"] for run in runs] == ["stored"]
    app.services.backend.close()
    assert 500 not in app.statuses


def test_an_undecided_search_is_kept_too(redis_url, clean_redis, tmp_path):
    # On a database of its own, a worker whose budget is one position: its search is
    # undecided, and that is the answer kept (the requests do not search here).
    url_1 = redis_url.rsplit("/", 1)[0] + "/1"
    app = make_app(url_1, ANALYSIS_INLINE_SECONDS=0)
    client = app.test_client()
    game, token, _response = create(client, VARIANT, seed=11)
    resign(client, game["id"], token)
    url = f"/v1/games/{game['id']}/analysis"
    with WorkerProcess(url_1, tmp_path / "worker.log", WINNABLE_POOL="clock=0",
                       ANALYSIS_POSITIONS="1") as worker:
        assert client.get(url).status_code == 202
        done = wait_for(lambda: (r := client.get(url)).status_code == 200 and r,
                        seconds=30, what="the analysis", step=0.2)
    assert done.get_json() == {"winnable": None, "line": None, "searched": 1,
                               "seconds": done.get_json()["seconds"]}
    assert [line["outcome"] for line in worker.lines() if line["message"] == "analysis"] == \
        ["stored"]
    with redis.Redis.from_url(url_1) as db_1:
        assert db_1.hget(f"game:{{{game['id']}}}", "a") == done.get_data()
    app.services.backend.close()
