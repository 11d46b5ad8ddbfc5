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
player's games (filters, pages by cursor) and the statistics read.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SPEC = ROOT / "openapi.yaml"
PACKAGE = "patience_client"
#: A game that follows hints ends well before this many moves; past it the client resigns.
MAX_MOVES = 600


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
