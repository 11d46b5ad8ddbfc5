"""The commands are pure functions from a stored game to a Change: tested here without
Redis, Flask or the pipeline."""

from __future__ import annotations

import pytest

from service.engine import IllegalMoveError, Move, get_variant
from service.engine.journal import UNDO, encode
from service.game import commands
from service.game.errors import GameError
from service.game.record import GameRecord, StoredGame, token_hash

AT = "2026-12-01T12:00:00.000Z"


def _stored(change: commands.Change) -> StoredGame:
    return StoredGame(change.version, change.record)


def _card_move(game: StoredGame) -> tuple[Move, str]:
    state = game.record.engine_state()
    move = next(m for m in state.legal_moves() if m.type == "move")
    return move, str(state.card_of(move))


def test_create_deals_the_seed_and_keeps_only_the_token_hash():
    change = commands.create("clock", 42, "full", AT)
    record = change.record
    assert (change.kind, change.version, change.stat, change.journal) == ("create", 0,
                                                                         "created", "")
    assert record.token == token_hash(change.token)
    assert record.state == get_variant("clock").deal(42).to_dict()
    assert GameRecord.from_json(record.to_json()) == record
    public = record.public("some-id", 0)
    assert public["seed"] == 42
    assert public["salt"] is None
    assert change.token not in str(record.to_json())


def test_move_undo_and_their_journal_tokens():
    game = _stored(commands.create("clock", 42, "full", AT))
    move, card = _card_move(game)
    moved = commands.move(game, move, AT, card=card)
    assert (moved.version, moved.moves, moved.stat) == (1, 1, None)
    assert moved.journal == encode(game.record.engine_state().variant, move)
    assert moved.events[0] == {"card": card, "from": move.source, "to": move.target}
    assert moved.record.moves == 1
    assert game.record.moves == 0  # the stored game is left as it was
    undone = commands.undo(_stored(moved), moved.journal, AT)
    assert (undone.version, undone.journal, undone.record.undos) == (2, UNDO, 1)
    assert undone.record.state == game.record.state
    assert undone.events == [{"card": card, "from": move.target, "to": move.source}]


def test_a_card_that_would_not_move_is_card_mismatch_and_nothing_else_runs():
    game = _stored(commands.create("clock", 42, "full", AT))
    move, card = _card_move(game)
    other = "AS" if card != "AS" else "KS"
    with pytest.raises(GameError) as refused:
        commands.move(game, move, AT, card=other)
    assert (refused.value.status, refused.value.code) == (409, "card_mismatch")


def test_resign_ends_the_game_and_a_finished_game_refuses_undo_and_autoplay_alike():
    game = _stored(commands.create("salic-law", 19, "full", AT))
    resigned = commands.move(game, Move("resign"), AT)
    assert (resigned.stat, resigned.record.status) == ("resigned", "resigned")
    over = _stored(resigned)
    for write in (lambda: commands.undo(over, resigned.journal, AT),
                  lambda: commands.autoplay(over, AT),
                  lambda: commands.move(over, Move("deal"), AT)):
        with pytest.raises(IllegalMoveError) as refused:
            write()
        assert refused.value.code == "game_over"


def test_autoplay_takes_one_version_and_one_token_per_move_or_changes_nothing():
    game = _stored(commands.create("salic-law", 19, "full", AT))
    idle = commands.autoplay(game, AT)
    assert (idle.version, idle.record, idle.journal, idle.events) == (0, game.record, "", [])
    for _deal in range(104):  # deal until a card can safely go home
        played = commands.autoplay(game, AT)
        if played.moves:
            break
        dealt = commands.move(game, Move("deal"), AT)
        game = _stored(dealt)
    else:
        pytest.fail("no deal of Salic Law 19 let autoplay play")
    assert played.version == game.version + played.moves
    assert len(played.events) >= played.moves
    replayed = game.record.engine_state()
    variant = replayed.variant
    tokens = ""
    for _ in range(played.moves):
        move = next(m for m in replayed.legal_moves() if m.type == "move"
                    and encode(variant, m) == played.journal[len(tokens):len(tokens) + 2])
        tokens += encode(variant, move)
        replayed, _step = replayed.apply(move)
    assert tokens == played.journal
    assert replayed.to_dict() == played.record.state


def test_delete_is_a_change_without_a_record():
    game = _stored(commands.create("clock", 1, "safe", AT))
    deleted = commands.delete(game)
    assert (deleted.kind, deleted.version, deleted.record) == ("delete", None, None)
