"""A Python client generated from the committed openapi.yaml plays every variant.

``openapi-python-client`` (pinned in pyproject.toml's dev extra) generates the client
into a temporary folder and must print nothing but its progress line: no warning, no
dropped model or response.  The client is imported from there (its own dependencies,
``httpx`` and ``attrs``, are dev dependencies too) and plays one game of every variant
to its end against a real gunicorn, through the generated functions only: it follows
the server's hints (or deals, draws, refills when the hint says so), sends each card
move with its ``card``, reads each answer's ``ETag`` and sends it back as ``If-Match``,
lets autoplay play now and then, and meets a refused move, a wrong ``card``, a stale
``If-Match`` and a ``304`` as typed answers.  A player, too, through the generated
functions only: the account made, games created with the player token, the list of the
player's games (filters, pages by cursor) and the statistics read.  And the daily deal:
two players' ranked attempts at today's Four Corners, a move and a resign through the
generated functions, the refusals typed (a second attempt, an anonymous one, a read of
the ranked game by anyone else), the day's board read a page at a time, a player's rank
and the entries around it, each entry the game's own result.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SPEC = ROOT / "openapi.yaml"
PACKAGE = "patience_client"
#: A game that follows hints ends well before this many moves; past it the client resigns.
MAX_MOVES = 600
#: The players of the daily test are made during the test: ranked play for any account
#: (the default takes accounts made before the day began).
API_ENV = {"DAILY_ACCOUNT_RULE": "any"}


@pytest.fixture(scope="module")
def client_package(tmp_path_factory):
    """The generated package, imported from a temporary folder."""
    folder = tmp_path_factory.mktemp("generated")
    target = folder / PACKAGE
    bin_dir = Path(sys.executable).parent
    # The generator formats its output with ruff (a post hook), the venv's.
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(
        [str(bin_dir / "openapi-python-client"), "generate", "--path", str(SPEC),
         "--meta", "none", "--output-path", str(target)],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    printed = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 0, "\n".join(printed)
    # Its only line when nothing went wrong; any warning (a dropped model or response,
    # a post hook that failed) adds lines.
    assert printed == [f"Generating {target}"], "\n".join(printed)
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


class _Api:
    """The generated client's modules this test uses: ``api.<op>`` functions, ``m`` models."""

    OPERATIONS = {
        "list_variants": "variants", "create_game": "games", "get_game": "games",
        "delete_game": "games", "play_move": "play", "get_history": "play",
        "get_hint": "help_", "autoplay": "help_",
        "create_player": "players", "get_player": "players", "list_player_games": "players",
        "get_player_stats": "players",
        "get_daily": "daily", "get_daily_day": "daily", "start_daily_attempt": "daily",
        "get_daily_board": "daily", "get_daily_board_around": "daily",
        "get_weekly_board_around": "daily", "get_streaks_board_around": "daily",
    }

    def __init__(self, package):
        self.package = package
        self.m = importlib.import_module(f"{package.__name__}.models")
        for name, tag in self.OPERATIONS.items():
            setattr(self, name, importlib.import_module(f"{package.__name__}.api.{tag}.{name}"))


@pytest.mark.timeout(240)
def test_a_generated_client_plays_every_variant_to_its_end(client_package, api):
    client = _Api(client_package)
    m = client.m
    with client_package.Client(base_url=api.base, raise_on_unexpected_status=True) as anyone:
        listed = client.list_variants.sync_detailed(client=anyone)
        assert listed.status_code == 200
        variants = listed.parsed.variants
        assert [v.id.value for v in variants] == ["clock", "salic-law", "four-corners"]
        checked_card = []
        for variant in variants:
            assert all(isinstance(spec.id, m.PileId) for spec in variant.piles)
            assert variant.autoplay_rule
            assert variant.hint_rule
            created = client.create_game.sync_detailed(
                client=anyone,
                body=m.CreateGame(variant=variant.id, seed=7, undo=m.CreateGameUndo.FULL),
                idempotency_key=f"client-{variant.id.value}")
            assert created.status_code == 201
            assert isinstance(created.parsed, m.GameCreated)
            with client_package.AuthenticatedClient(
                    base_url=api.base, token=created.parsed.player_token,
                    raise_on_unexpected_status=True) as player:
                checked_card.append(_play_to_the_end(client, anyone, player, variant,
                                                     created))
        assert any(checked_card)  # a first hint was a card move somewhere


def _play_to_the_end(client, anyone, player, variant, created) -> bool:
    """Play the created game to its end; True if a wrong ``card`` was tried."""
    m = client.m
    game = created.parsed.game
    assert created.headers["Location"] == f"/v1/games/{game.id}"
    assert [pile.id for pile in game.piles] == [spec.id for spec in variant.piles]
    etag = created.headers["ETag"]
    assert etag == '"0"'

    unchanged = client.get_game.sync_detailed(game.id, client=anyone, if_none_match=etag)
    assert unchanged.status_code == 304
    assert unchanged.parsed is None
    assert unchanged.headers["ETag"] == etag

    # A refused move is a typed problem, and changes nothing.
    stock = m.PileId("stock")
    refused = client.play_move.sync_detailed(
        game.id, client=player, body=m.CardMove(type_="move", from_=stock, to=stock),
        if_match=etag)
    assert refused.status_code == 422
    assert isinstance(refused.parsed, m.Problem)
    assert refused.parsed.code == m.ProblemCode.SAME_PILE
    assert refused.parsed.type_ == "urn:patience:problem:same_pile"
    assert refused.parsed.status == 422

    moves = 0
    checked_card = False
    while game.status == m.GameStatus.PLAYING:
        hint = client.get_hint.sync_detailed(game.id, client=anyone)
        assert hint.status_code == 200
        assert hint.headers["ETag"] == etag  # the hint is for this version
        suggested = hint.parsed.move
        if suggested is None or moves >= MAX_MOVES:
            move = m.ResignMove(type_="resign")
        elif isinstance(suggested, m.ListedCardMove):
            # With its card: a precondition the server checks (409 card_mismatch).
            move = m.CardMove(type_="move", from_=suggested.from_, to=suggested.to,
                              card=suggested.card)
            if moves == 0:
                other = "AS" if suggested.card != "AS" else "2S"
                mismatch = client.play_move.sync_detailed(
                    game.id, client=player, if_match=etag,
                    body=m.CardMove(type_="move", from_=suggested.from_, to=suggested.to,
                                    card=other))
                assert mismatch.status_code == 409
                assert mismatch.parsed.code == m.ProblemCode.CARD_MISMATCH
                checked_card = True
        else:
            move = suggested  # deal, draw or refill
        played = client.play_move.sync_detailed(game.id, client=player, body=move,
                                                if_match=etag)
        assert played.status_code == 200, played.content
        assert isinstance(played.parsed, m.MoveResult)
        game = played.parsed.game
        assert played.headers["ETag"] == f'"{game.version}"'
        if moves == 0:
            # The ETag read before this move is stale now: 412, as a problem.
            stale = client.play_move.sync_detailed(game.id, client=player, body=move,
                                                   if_match=etag)
            assert stale.status_code == 412
            assert stale.parsed.code == m.ProblemCode.VERSION_MISMATCH
        etag = played.headers["ETag"]
        moves += 1
        if moves % 25 == 0 and game.status == m.GameStatus.PLAYING:
            safe = client.autoplay.sync_detailed(game.id, client=player, if_match=etag)
            assert safe.status_code == 200
            assert safe.parsed.game.version == game.version + len(safe.parsed.events)
            game = safe.parsed.game
            etag = safe.headers["ETag"]

    assert game.status in (m.GameStatus.WON, m.GameStatus.LOST, m.GameStatus.RESIGNED)
    assert game.seed == 7
    assert isinstance(game.salt, str)  # shown once the game is over
    history = client.get_history.sync_detailed(game.id, client=anyone)
    assert len(history.parsed.moves) == game.moves_made == game.version
    assert all(isinstance(event.from_, m.PileId) for entry in history.parsed.moves
               for event in entry.events)
    over = client.play_move.sync_detailed(game.id, client=player,
                                          body=m.ResignMove(type_="resign"))
    assert (over.status_code, over.parsed.code) == (422, m.ProblemCode.GAME_OVER)
    deleted = client.delete_game.sync_detailed(game.id, client=player)
    assert deleted.status_code == 204
    gone = client.get_game.sync_detailed(game.id, client=anyone)
    assert (gone.status_code, gone.parsed.code) == (404, m.ProblemCode.GAME_NOT_FOUND)
    return checked_card


@pytest.mark.timeout(120)
def test_a_generated_client_keeps_a_players_games_and_statistics(client_package, api):
    client = _Api(client_package)
    m = client.m
    with client_package.Client(base_url=api.base, raise_on_unexpected_status=True) as anyone:
        made = client.create_player.sync_detailed(client=anyone, body=m.NewPlayer(name=" Ada "))
        assert made.status_code == 201
        assert isinstance(made.parsed, m.PlayerCreated)
        assert made.parsed.player.name == "Ada"
        assert made.parsed.player.kind == m.PlayerKind.ISSUED
        assert made.headers["Location"] == "/v1/players/me"
        token = made.parsed.player_token
        assert token.startswith(f"pl_{made.parsed.player.id}_")
    forged = "pl_" + "a" * 26 + "_" + "b" * 43
    with client_package.AuthenticatedClient(base_url=api.base, token=forged) as stranger:
        refused = client.get_player.sync_detailed(client=stranger)
        assert (refused.status_code, refused.parsed.code) == (401, m.ProblemCode.INVALID_TOKEN)

    with client_package.AuthenticatedClient(base_url=api.base, token=token,
                                            raise_on_unexpected_status=True) as player:
        me = client.get_player.sync_detailed(client=player)
        assert (me.status_code, me.parsed.id, me.parsed.name) == (200, made.parsed.player.id, "Ada")
        # Games created with the player token are the player's: two Clocks, a Four Corners.
        created = []
        for variant, seed in (("clock", 7), ("four-corners", 109), ("clock", 8)):
            answer = client.create_game.sync_detailed(
                client=player, body=m.CreateGame(variant=m.VariantId(variant), seed=seed),
                idempotency_key=f"player-{variant}-{seed}")
            assert answer.status_code == 201
            created.append(answer.parsed)
        # The player resigns the Four Corners with the player token.
        corners = created[1].game
        resigned = client.play_move.sync_detailed(
            corners.id, client=player, body=m.ResignMove(type_="resign"),
            if_match=f'"{corners.version}"')
        assert resigned.status_code == 200
        assert resigned.parsed.game.status == m.GameStatus.RESIGNED

        # My games, newest first, a page at a time.
        ids = [c.game.id for c in created][::-1]
        first = client.list_player_games.sync_detailed(client=player, limit=2)
        assert first.status_code == 200
        assert isinstance(first.parsed, m.PlayerGames)
        assert [g.id for g in first.parsed.games] == ids[:2]
        assert isinstance(first.parsed.next_cursor, str)
        rest = client.list_player_games.sync_detailed(client=player, limit=2,
                                                      cursor=first.parsed.next_cursor)
        assert [g.id for g in rest.parsed.games] == ids[2:]
        assert rest.parsed.next_cursor is None
        summary = first.parsed.games[1]
        assert isinstance(summary, m.GameSummary)
        assert (summary.id, summary.variant, summary.status) == (
            corners.id, m.VariantId.FOUR_CORNERS, m.GameStatus.RESIGNED)
        assert summary.ended is not None
        clocks = client.list_player_games.sync_detailed(
            client=player, variant=m.VariantId.CLOCK, status=m.GameStatus.PLAYING)
        assert [g.id for g in clocks.parsed.games] == [ids[0], ids[2]]
        assert all(g.ended is None for g in clocks.parsed.games)

        # The statistics, per variant in the order of the variants.
        stats = client.get_player_stats.sync_detailed(client=player)
        assert stats.status_code == 200
        assert isinstance(stats.parsed, m.PlayerStats)
        rows = {row.variant.value: row for row in stats.parsed.variants}
        assert list(rows) == ["clock", "salic-law", "four-corners"]
        four = rows["four-corners"]
        assert (four.played, four.won, four.lost, four.resigned, four.in_play) == (1, 0, 0, 1, 0)
        assert (four.win_rate, four.current_streak, four.fewest_moves) == (0.0, 0, None)
        clock = rows["clock"]
        assert (clock.played, clock.in_play, clock.win_rate) == (0, 2, None)


@pytest.mark.timeout(120)
def test_a_generated_client_plays_the_daily_deal_and_reads_the_board(client_package, api):
    # Four Corners: no worker fills the pools here, and its day's deal is then a random
    # one (not proved winnable), so the attempt never waits for a search.
    client = _Api(client_package)
    m = client.m
    variant = "four-corners"
    with client_package.Client(base_url=api.base, raise_on_unexpected_status=True) as anyone:
        today = client.get_daily.sync_detailed(client=anyone)
        assert today.status_code == 200
        assert isinstance(today.parsed, m.DailyOverview)
        day = today.parsed.day
        assert [v.variant.value for v in today.parsed.variants] == \
            ["clock", "salic-law", "four-corners"]
        players = {}
        for name in ("Ada", "Bob"):
            made = client.create_player.sync_detailed(client=anyone, body=m.NewPlayer(name=name))
            assert made.status_code == 201
            players[name] = (made.parsed.player.id, made.parsed.player_token)
    with client_package.AuthenticatedClient(base_url=api.base, token="pl_" + "a" * 26 + "_"
                                            + "b" * 43) as forged:
        refused = client.start_daily_attempt.sync_detailed(variant, day, client=forged)
        assert (refused.status_code, refused.parsed.code) == (401, m.ProblemCode.INVALID_TOKEN)

    results = {}
    for name, (_player_id, token) in players.items():
        with client_package.AuthenticatedClient(base_url=api.base, token=token,
                                                raise_on_unexpected_status=True) as player:
            started = client.start_daily_attempt.sync_detailed(variant, day, client=player)
            assert started.status_code == 201, started.content
            assert isinstance(started.parsed, m.GameCreated)
            game = started.parsed.game
            assert started.headers["Location"] == f"/v1/games/{game.id}"
            assert isinstance(game.ranked, m.RankedPart)
            assert (game.ranked.day, game.ranked.result) == (day, None)
            assert (game.undo.value, game.seed, game.salt) == ("off", None, None)
            again = client.start_daily_attempt.sync_detailed(variant, day, client=player)
            assert (again.status_code, again.parsed.code) == (409, m.ProblemCode.ATTEMPT_TAKEN)
            described = client.get_daily_day.sync_detailed(variant, day, client=player)
            assert isinstance(described.parsed, m.DailyDay)
            assert described.parsed.my_game == f"/v1/games/{game.id}"
            assert described.parsed.deal_commitment == game.deal_commitment
            assert described.parsed.seed is None
            # Hidden from anyone else while the day is open.
            with client_package.Client(base_url=api.base) as stranger:
                hidden = client.get_game.sync_detailed(game.id, client=stranger)
                assert (hidden.status_code, hidden.parsed.code) == \
                    (403, m.ProblemCode.RANKED_GAME_HIDDEN)
            etag = started.headers["ETag"]
            if name == "Ada":  # Ada deals once before she resigns; Bob resigns at once
                dealt = client.play_move.sync_detailed(
                    game.id, client=player, body=m.DealMove(type_="deal"), if_match=etag)
                assert dealt.status_code == 200, dealt.content
                etag = dealt.headers["ETag"]
            over = client.play_move.sync_detailed(
                game.id, client=player, body=m.ResignMove(type_="resign"), if_match=etag)
            assert over.status_code == 200
            ended = over.parsed.game
            assert ended.status == m.GameStatus.RESIGNED
            assert ended.seed is None  # secret until the day is over
            result = ended.ranked.result
            assert isinstance(result, m.RankedResult)
            assert (result.outcome.value, result.moves) == \
                ("resigned", 2 if name == "Ada" else 1)
            results[name] = (game.id, result)

    with client_package.Client(base_url=api.base, raise_on_unexpected_status=True) as anyone:
        first = client.get_daily_board.sync_detailed(variant, day, client=anyone, limit=1)
        assert first.status_code == 200
        assert isinstance(first.parsed, m.DayBoard)
        assert (first.parsed.count, len(first.parsed.entries)) == (2, 1)
        assert isinstance(first.parsed.next_cursor, str)
        rest = client.get_daily_board.sync_detailed(variant, day, client=anyone, limit=1,
                                                    cursor=first.parsed.next_cursor)
        assert rest.parsed.next_cursor is None
        entries = first.parsed.entries + rest.parsed.entries
        assert [e.rank for e in entries] == [1, 2]
        assert sorted(e.name for e in entries) == ["Ada", "Bob"]
        # Each entry is its game's own result, with a link to the game.
        for entry in entries:
            assert isinstance(entry, m.BoardEntry)
            game_id, result = results[entry.name]
            assert (entry.game_id, entry.game_url) == (game_id, f"/v1/games/{game_id}")
            assert (entry.outcome.value, entry.moves, entry.time_ms, entry.cards_home,
                    entry.score) == (result.outcome.value, result.moves, result.time_ms,
                                     result.cards_home, result.score)
        assert entries[0].score <= entries[1].score
        ranks = {e.player_id: e.rank for e in entries}
        ada_id = players["Ada"][0]
        around = client.get_daily_board_around.sync_detailed(variant, day, ada_id,
                                                             client=anyone, around=1)
        assert around.status_code == 200
        assert isinstance(around.parsed, m.BoardAround)
        assert (around.parsed.rank, around.parsed.count) == (ranks[ada_id], 2)
        assert [e.player_id for e in around.parsed.entries] == [e.player_id for e in entries]
    with client_package.Client(base_url=api.base) as stranger:
        nobody = client.get_daily_board_around.sync_detailed(variant, day, "a" * 26,
                                                             client=stranger)
        assert (nobody.status_code, nobody.parsed.code) == (404, m.ProblemCode.NOT_ON_BOARD)
        # Resigned games win no day: no entry on the week's board nor on the streaks'.
        year, number, _ = date.fromisoformat(day[:10]).isocalendar()
        week = client.get_weekly_board_around.sync_detailed(
            variant, f"{year}-W{number:02d}", ada_id, client=stranger, around=1)
        streak = client.get_streaks_board_around.sync_detailed(variant, ada_id,
                                                               client=stranger, around=1)
        for missing in (week, streak):
            assert (missing.status_code, missing.parsed.code) == \
                (404, m.ProblemCode.NOT_ON_BOARD)
