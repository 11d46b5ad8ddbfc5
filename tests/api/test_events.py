"""GET /v1/games/<id>/events: the events feed, as JSON and as Server-Sent Events.

The streams here run in-process (the test client iterates the response); the feed
across gunicorn workers and replicas is in tests/e2e/test_events_e2e.py.
"""

from __future__ import annotations

import itertools
import threading

import pytest

from service.app import close_app
from service.engine import Move, get_variant
from service.storage import keys
from tests.api.support import (
    auth,
    create,
    first_of,
    legal,
    make_app,
    play,
    public_piles,
    replay,
    stored_journal,
)
from tests.notation import cards_on
from tests.sse import events_only, messages

CLOCK_42_FIRST = {"type": "move", "from": "packet-4", "to": "foundation-1"}
STREAM = {"Accept": "text/event-stream"}


@pytest.fixture
def sse_app(clean_redis, redis_url):
    """An app whose streams beat every 0.1 s (tests wait on heartbeats, not 15 s)."""
    app = make_app(redis_url, SSE_HEARTBEAT_SECONDS=0.1)
    yield app
    close_app(app)
    assert 500 not in app.statuses


@pytest.fixture
def sse(sse_app):
    return sse_app.test_client()


def _stream(client, game_id: str, query: str = "", **headers):
    headers = {key.replace("_", "-"): value for key, value in headers.items()}
    return client.get(f"/v1/games/{game_id}/events{query}", headers={**STREAM, **headers})


def _open(client, game_id: str, query: str = "", **headers):
    """Open a stream: (response, iterator over its messages)."""
    response = _stream(client, game_id, query, **headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "text/event-stream"
    return response, messages(iter(response.response))


def _clock_42(client, undo="full"):
    game, token, _ = create(client, "clock", seed=42, undo=undo)
    return game["id"], token


# --- JSON --------------------------------------------------------------------------------
@pytest.mark.cluster
def test_the_json_feed_lists_moves_and_undos_after_a_version(client):
    gid, token = _clock_42(client)
    moved = play(client, gid, token, CLOCK_42_FIRST)
    undone = client.post(f"/v1/games/{gid}/undo", headers=auth(token))
    drawn = play(client, gid, token, {"type": "draw"})
    assert drawn.status_code == 200
    response = client.get(f"/v1/games/{gid}/events?after=0")
    assert response.status_code == 200
    assert response.headers["ETag"] == '"3"'
    assert {"Accept", "Last-Event-ID"} <= set(response.vary)
    body = response.get_json()
    assert body["game"] == client.get(f"/v1/games/{gid}").get_json()
    assert body["events"] == [
        {"version": 1, "move": CLOCK_42_FIRST, "events": moved.get_json()["events"]},
        {"version": 2, "move": {"type": "undo"}, "events": undone.get_json()["events"]},
        {"version": 3, "move": {"type": "draw"}, "events": drawn.get_json()["events"]},
    ]
    # The history drops the undone move; the feed keeps both.
    history = client.get(f"/v1/games/{gid}/history").get_json()["moves"]
    assert history == [body["events"][2]]
    # after=1: what came after version 1; no after: everything.
    assert [e["version"] for e in
            client.get(f"/v1/games/{gid}/events?after=1").get_json()["events"]] == [2, 3]
    assert client.get(f"/v1/games/{gid}/events").get_json()["events"] == body["events"]
    assert client.get(f"/v1/games/{gid}/events?after=3").get_json()["events"] == []
    assert client.get(f"/v1/games/{gid}/events?after=99").get_json()["events"] == []
    # Last-Event-ID takes the place of after.
    resumed = client.get(f"/v1/games/{gid}/events?after=0", headers={"Last-Event-ID": "2"})
    assert [e["version"] for e in resumed.get_json()["events"]] == [3]
    # A conditional read of an unchanged game: 304.
    again = client.get(f"/v1/games/{gid}/events?after=0", headers={"If-None-Match": '"3"'})
    assert again.status_code == 304


def test_a_new_game_has_an_empty_feed(client):
    gid, _token = _clock_42(client)
    body = client.get(f"/v1/games/{gid}/events").get_json()
    assert body["events"] == []
    assert body["game"]["version"] == 0


@pytest.mark.parametrize("after", ["-1", "x", "1.5", "", "99999999999999999999",
                                   "9223372036854775808"])
def test_a_bad_after_is_400_invalid_request(client, after):
    gid, _token = _clock_42(client)
    response = client.get(f"/v1/games/{gid}/events?after={after}")
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "invalid_request"
    assert "after" in body["errors"]


@pytest.mark.parametrize("value", ["x", "-1", "1 2", "", "9223372036854775808"])
def test_a_bad_last_event_id_is_400_invalid_header(client, value):
    gid, _token = _clock_42(client)
    for headers in ({}, STREAM):
        response = client.get(f"/v1/games/{gid}/events",
                              headers={"Last-Event-ID": value, **headers})
        assert response.status_code == 400
        assert response.get_json()["code"] == "invalid_header"


def test_unknown_and_deleted_games_are_404(client):
    assert client.get("/v1/games/nosuchgame/events").status_code == 404
    assert client.get("/v1/games/nosuchgame/events", headers=STREAM).status_code == 404
    gid, token = _clock_42(client)
    assert client.delete(f"/v1/games/{gid}", headers=auth(token)).status_code == 204
    for headers in ({}, STREAM):
        response = client.get(f"/v1/games/{gid}/events", headers=headers)
        assert response.status_code == 404
        assert response.get_json()["code"] == "game_not_found"


def test_refused_writes_and_replays_add_nothing_to_the_feed(client):
    gid, token = _clock_42(client, undo="safe")
    key = {"Idempotency-Key": "once"}
    assert play(client, gid, token, CLOCK_42_FIRST, **key).status_code == 200
    assert play(client, gid, token, CLOCK_42_FIRST, **key).status_code == 200  # a replay
    assert play(client, gid, token, CLOCK_42_FIRST).status_code == 422  # illegal now
    assert play(client, gid, token, {"type": "refill"}, If_Match='"0"').status_code == 412
    assert play(client, gid, token, {"type": "refill"}).status_code == 200
    blocked = client.post(f"/v1/games/{gid}/undo", headers=auth(token))
    assert blocked.status_code == 409  # the refill turned a stock card up
    events = client.get(f"/v1/games/{gid}/events").get_json()["events"]
    assert [(e["version"], e["move"]["type"]) for e in events] == [(1, "move"), (2, "refill")]


def test_the_feed_names_no_card_before_it_is_dealt(client, redis_db):
    """Play a whole Salic Law deal: every card that leaves the stock in the feed is the
    card that then lies face up where it went, and nothing else of the stock shows."""
    game, token, _ = create(client, "salic-law", seed=3)
    gid = game["id"]
    for _ in range(40):
        move = first_of(legal(client, gid), "deal")
        assert play(client, gid, token, move).status_code == 200
    feed = client.get(f"/v1/games/{gid}/events").get_json()
    variant = get_variant("salic-law")
    state = variant.deal(3)
    for entry in feed["events"]:
        state, step = state.apply(Move.from_dict(entry["move"]))
        assert entry["events"] == [event.to_dict() for event in step.events]
        for event in entry["events"]:
            if event["from"] == "stock":
                assert str(cards_on(state, event["to"])[-1]) == event["card"]
    assert public_piles(state) == {p["id"]: p["cards"] for p in feed["game"]["piles"]}


# --- Server-Sent Events -----------------------------------------------------------------
@pytest.mark.cluster
def test_a_stream_sends_the_backlog_then_every_change_live_and_ends_with_the_game(sse):
    gid, token = _clock_42(sse)
    assert play(sse, gid, token, CLOCK_42_FIRST).status_code == 200
    response, stream = _open(sse, gid, "?after=0")
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["ETag"] == '"1"'
    assert next(stream).retry == 3000
    first = next(stream)
    assert (first.id, first.event) == ("1", "move")
    assert first.json() == {"version": 1, "move": CLOCK_42_FIRST,
                            "events": [{"card": "7C", "from": "packet-4", "to": "foundation-1"}]}
    assert next(stream).comment == "heartbeat"  # nothing happens: a heartbeat
    undone = sse.post(f"/v1/games/{gid}/undo", headers=auth(token)).get_json()
    message = next(events_only(stream))
    assert (message.id, message.event) == ("2", "undo")
    assert message.json() == {"version": 2, "move": {"type": "undo"},
                              "events": undone["events"]}
    resigned = play(sse, gid, token, {"type": "resign"}).get_json()["game"]
    message = next(events_only(stream))
    assert (message.id, message.event, message.json()["move"]) == ("3", "move",
                                                                  {"type": "resign"})
    end = next(stream)
    assert (end.event, end.id) == ("end", None)
    assert end.json() == {"version": 3, "game": resigned}
    assert end.json()["game"]["salt"] is not None  # over: seed and salt are shown
    assert next(stream, None) is None  # the stream is closed
    response.close()
    # A reconnecting EventSource (Last-Event-ID: 3) is told to stop: 204, no body.
    done = _stream(sse, gid, Last_Event_ID="3")
    assert done.status_code == 204
    assert done.get_data() == b""
    # One that missed the end gets the rest and the end again.
    response, stream = _open(sse, gid, Last_Event_ID="2")
    assert [m.event for m in events_only(stream)] == ["move", "end"]
    response.close()


@pytest.mark.cluster
def test_a_stream_resumes_after_last_event_id(sse):
    gid, token = _clock_42(sse)
    for move in (CLOCK_42_FIRST, {"type": "refill"}, {"type": "draw"}):
        assert play(sse, gid, token, move).status_code == 200
    response, stream = _open(sse, gid, "?after=0", Last_Event_ID="1")
    received = [next(events_only(stream)) for _ in range(2)]
    assert [m.id for m in received] == ["2", "3"]
    assert next(stream).comment == "heartbeat"
    response.close()


def test_several_streams_follow_the_same_game(sse_app):
    clients = [sse_app.test_client() for _ in range(3)]
    gid, token = _clock_42(clients[0])
    opened = [_open(client, gid) for client in clients]
    assert play(clients[0], gid, token, CLOCK_42_FIRST).status_code == 200
    for response, stream in opened:
        message = next(events_only(stream))
        assert (message.id, message.event) == ("1", "move")
        response.close()


@pytest.mark.cluster
def test_autoplay_streams_one_entry_per_move(sse, redis_db):
    from tests.api.test_help_endpoints import (
        SALIC_AUTOPLAY_SEED,
        SALIC_BEFORE_AUTOPLAY,
        play_all,
    )

    game, token, _ = create(sse, "salic-law", seed=SALIC_AUTOPLAY_SEED)
    gid = game["id"]
    play_all(sse, gid, token, SALIC_BEFORE_AUTOPLAY)
    response, stream = _open(sse, gid, "?after=82")
    assert sse.post(f"/v1/games/{gid}/autoplay", headers=auth(token)).status_code == 200
    received = [next(events_only(stream)) for _ in range(3)]
    assert [int(m.id) for m in received] == list(range(83, 86))
    assert {m.event for m in received} == {"move"}
    assert all(len(m.json()["events"]) == 1 for m in received)
    response.close()


@pytest.mark.cluster
def test_deleting_a_game_ends_its_streams(sse):
    gid, token = _clock_42(sse)
    response, stream = _open(sse, gid)
    assert next(stream).retry is not None
    assert sse.delete(f"/v1/games/{gid}", headers=auth(token)).status_code == 204
    message = next(events_only(stream))
    assert message.event == "deleted"
    assert message.json() == {"id": gid}
    assert next(stream, None) is None
    response.close()


def test_an_expired_game_ends_its_streams(sse, redis_db):
    gid, _token = _clock_42(sse)
    response, stream = _open(sse, gid)
    assert next(stream).retry is not None
    redis_db.delete(keys.game(gid))  # what expiry does
    assert next(events_only(stream)).event == "deleted"
    assert next(stream, None) is None
    response.close()


def test_the_feed_reaches_back_to_the_deal_however_long_the_game(sse, redis_db):
    """The feed is replayed from the journal: every version since the deal, undos too,
    for a reader who starts at 0 long after the game began."""
    gid, token = _clock_42(sse)
    played = [CLOCK_42_FIRST, {"type": "refill"}, {"type": "draw"}]
    for move in played:
        assert play(sse, gid, token, move).status_code == 200
    undone = sse.post(f"/v1/games/{gid}/undo", headers=auth(token)).get_json()["events"]
    journal = stored_journal(redis_db, gid)
    assert len(journal) == 5  # one token per version: a card move is two characters
    entries = sse.get(f"/v1/games/{gid}/events?after=0").get_json()["events"]
    assert [entry["version"] for entry in entries] == [1, 2, 3, 4]
    assert [entry["move"] for entry in entries] == [*played, {"type": "undo"}]
    assert entries[3]["events"] == undone
    assert [{"card": e["card"], "from": e["to"], "to": e["from"]}
            for e in reversed(entries[2]["events"])] == undone
    history = sse.get(f"/v1/games/{gid}/history").get_json()["moves"]
    assert history == entries[:2]
    response, stream = _open(sse, gid, "?after=0")
    assert [(m.id, m.event) for m in itertools.islice(events_only(stream), 4)] == [
        ("1", "move"), ("2", "move"), ("3", "move"), ("4", "undo")]
    assert play(sse, gid, token, {"type": "draw"}).status_code == 200
    assert next(events_only(stream)).id == "5"
    response.close()


def test_a_client_ahead_of_the_game_gets_the_whole_game_first(sse):
    gid, token = _clock_42(sse)
    assert play(sse, gid, token, CLOCK_42_FIRST).status_code == 200
    # A client ahead of the game (a restored backup): the game, then what follows.
    response, stream = _open(sse, gid, "?after=7")
    first = next(events_only(stream))
    assert (first.id, first.event) == ("1", "game")
    assert first.json() == {"version": 1, "game": sse.get(f"/v1/games/{gid}").get_json()}
    assert play(sse, gid, token, {"type": "refill"}).status_code == 200
    assert next(events_only(stream)).id == "2"
    response.close()


def test_streams_per_process_are_bounded(redis_url, clean_redis):
    app = make_app(redis_url, SSE_HEARTBEAT_SECONDS=0.1, SSE_MAX_STREAMS=2)
    try:
        clients = [app.test_client() for _ in range(3)]
        gid, _token = _clock_42(clients[0])
        first, second = _open(clients[0], gid), _open(clients[1], gid)
        refused = _stream(clients[2], gid)
        assert refused.status_code == 503
        assert refused.get_json()["code"] == "too_many_streams"
        assert int(refused.headers["Retry-After"]) > 0
        # JSON reads are not streams: still answered.
        assert clients[2].get(f"/v1/games/{gid}/events").status_code == 200
        first[0].close()  # a stream that ends gives its place back
        third = _open(clients[2], gid)
        for opened in (second, third):
            opened[0].close()
    finally:
        close_app(app)


def test_a_stream_ends_after_its_maximum_life_and_on_shutdown(redis_url, clean_redis):
    app = make_app(redis_url, SSE_HEARTBEAT_SECONDS=0.1, SSE_MAX_SECONDS=0.3)
    try:
        client = app.test_client()
        gid, _token = _clock_42(client)
        response, stream = _open(client, gid)
        assert all(m.comment == "heartbeat" for m in list(stream)[1:])
        response.close()
    finally:
        close_app(app)


def test_a_stopping_process_ends_its_streams(sse_app, sse):
    gid, _token = _clock_42(sse)
    response, stream = _open(sse, gid)
    assert next(stream).retry is not None
    sse_app.services.events_feed.stop_streams()  # what SIGTERM does under gunicorn
    assert list(events_only(stream)) == []  # closed, with no end: the client resumes
    response.close()


def test_a_storage_outage_ends_a_stream_quietly(sse, redis_server):
    gid, _token = _clock_42(sse)
    response, stream = _open(sse, gid)
    assert next(stream).retry is not None
    redis_server.kill()
    try:
        assert list(events_only(stream)) == []
    finally:
        redis_server.start()
    response.close()


@pytest.mark.cluster
def test_a_move_made_while_a_stream_waits_wakes_it(sse_app):
    """The stream blocks in XREAD in its own thread while another client moves."""
    client = sse_app.test_client()
    gid, token = _clock_42(client)
    response, stream = _open(client, gid)
    received = []

    def follow():
        received.extend(message for message in events_only(stream))

    thread = threading.Thread(target=follow)
    thread.start()
    other = sse_app.test_client()
    for move in (CLOCK_42_FIRST, {"type": "refill"}, {"type": "resign"}):
        assert play(other, gid, token, move).status_code == 200
    thread.join(10)
    assert not thread.is_alive()
    assert [(m.id, m.event) for m in received] == [("1", "move"), ("2", "move"), ("3", "move"),
                                                   (None, "end")]
    response.close()


def test_the_feed_replays_to_the_game(client):
    """Applying the feed's moves (and undos) to the deal gives the stored game."""
    gid, token = _clock_42(client)
    for move in (CLOCK_42_FIRST, {"type": "refill"}):
        assert play(client, gid, token, move).status_code == 200
    assert client.post(f"/v1/games/{gid}/undo", headers=auth(token)).status_code == 200
    feed = client.get(f"/v1/games/{gid}/events").get_json()
    moves = []
    for entry in feed["events"]:
        if entry["move"]["type"] == "undo":
            moves.pop()
        else:
            moves.append(entry)
    state = replay("clock", 42, moves)
    assert public_piles(state) == {p["id"]: p["cards"] for p in feed["game"]["piles"]}


def test_the_documented_json_example_is_what_the_feed_answers(client):
    from tests.contract import spec

    gid, token = _clock_42(client, undo="safe")
    assert play(client, gid, token, CLOCK_42_FIRST).status_code == 200
    assert client.post(f"/v1/games/{gid}/undo", headers=auth(token)).status_code == 200
    body = client.get(f"/v1/games/{gid}/events?after=0").get_json()
    content = spec()["paths"]["/v1/games/{id}/events"]["get"]["responses"]["200"]["content"]
    example = content["application/json"]["examples"]["move-and-undo"]["value"]
    assert body["events"] == example["events"]
    unique = ("id", "deal_commitment", "created_at", "updated_at")
    assert {k: v for k, v in body["game"].items() if k not in unique} == \
        {k: v for k, v in example["game"].items() if k not in unique}
