"""The daily deal's pure parts: the calendar (days, their ids, offsets, short periods,
ISO weeks), the score (its order: wins by moves then time, every win before every loss,
losses by cards home then moves) and the result a ranked game's end writes into its
record (docs/daily.md)."""

from __future__ import annotations

import pytest

from service.daily.calendar import Calendar
from service.engine import Move
from service.engine.moves import RESIGN
from service.game import commands
from service.game.errors import GameError
from service.game.ranked import LOSS_BASE, MAX_MOVES, score
from service.game.record import StoredGame

DAY_MS = 86_400_000


def test_days_their_ids_and_their_bounds():
    calendar = Calendar()
    at = 1_764_892_800_000 + 5 * 3_600_000  # 2025-12-05 05:00 UTC
    day = calendar.index(at)
    assert calendar.day_id(day) == "2025-12-05"
    assert calendar.start_ms(day) <= at < calendar.end_ms(day)
    assert calendar.end_ms(day) - calendar.start_ms(day) == DAY_MS
    assert calendar.parse("2025-12-05") == day
    assert calendar.week_id(day) == "2025-W49"
    for wrong in ("2025-13-01", "2025-02-30", "20251205", "2025-12-05T000000", ""):
        assert calendar.parse(wrong) is None, wrong


def test_an_offset_moves_the_day_s_start():
    calendar = Calendar(86_400, 3_600)  # days begin at 01:00 UTC
    just_after_midnight = 1_764_892_800_000 + 60_000
    day = calendar.index(just_after_midnight)
    assert calendar.day_id(day) == "2025-12-04"  # began on the 4th at 01:00
    assert calendar.start_ms(day + 1) == 1_764_892_800_000 + 3_600_000
    assert calendar.parse(calendar.day_id(day + 1)) == day + 1


def test_short_periods_have_ids_of_their_own():
    calendar = Calendar(10, 3)
    ids = {calendar.day_id(day) for day in range(100_000_000, 100_000_020)}
    assert len(ids) == 20
    for day in range(100_000_000, 100_000_020):
        assert calendar.parse(calendar.day_id(day)) == day
    assert calendar.parse("2001-09-09T014644") is None  # not a day's start
    with pytest.raises(ValueError, match="DAILY_PERIOD_SECONDS"):
        Calendar(0)


def test_the_score_orders_wins_then_losses():
    ordered = [score("won", 50, 1_000, 104), score("won", 50, 2_000, 104),
               score("won", 51, 0, 104), score("won", MAX_MOVES, 10**12, 104),
               score("lost", 10, 0, 80), score("resigned", 20, 0, 80),
               score("abandoned", 1, 0, 79), score("lost", 0, 0, 0)]
    assert ordered == sorted(ordered)
    assert len(set(ordered)) == len(ordered)
    assert all(value < LOSS_BASE for value in ordered[:4])
    assert all(value >= LOSS_BASE for value in ordered[4:])
    assert all(value < 2**53 for value in ordered)  # exact in a ZSET's double


def _ranked_game() -> StoredGame:
    created = commands.create("clock", None, "off", "2026-12-05T10:00:00.000Z",
                              secret_seed=42, salt="0" * 32, owner="p",
                              ranked={"day": "2026-12-05", "index": 1,
                                      "deadline_ms": 10**15})
    return StoredGame(0, created.record)


def test_a_ranked_game_s_end_writes_its_result_and_refuses_undo_delete_claim():
    game = _ranked_game()
    assert (game.record.seed, game.record.salt, game.record.undo) == (42, "0" * 32, "off")
    for refused in (lambda: commands.undo(game, "", "2026-12-05T10:00:01.000Z"),
                    lambda: commands.delete(game),
                    lambda: commands.claim(game, "q")):
        with pytest.raises(GameError) as raised:
            refused()
        assert (raised.value.status, raised.value.code) == (409, "ranked_game")
    ended = commands.settle(commands.move(game, Move(RESIGN), "2026-12-05T10:00:02.500Z"))
    result = ended.record.ranked["result"]
    assert result == {"outcome": "resigned", "moves": 1, "time_ms": 2_500,
                      "cards_home": result["cards_home"],
                      "score": score("resigned", 1, 2_500, result["cards_home"])}
    # Settled once: a second settle keeps it.
    assert commands.settle(ended).record.ranked["result"] == result
    abandoned = commands.abandon(game, "2026-12-05T10:00:03.000Z")
    assert abandoned.kind == commands.ABANDON
    assert abandoned.record.ranked["result"]["outcome"] == "abandoned"
    # A game over already is left as it is.
    assert commands.abandon(StoredGame(1, ended.record), "x").record is ended.record
