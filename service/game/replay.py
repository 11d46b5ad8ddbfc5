"""A stored game replayed from its deal through its journal (:mod:`service.engine.journal`):
the history, the events feed and undo read the game this way."""

from __future__ import annotations

from service.engine import InvalidMoveError, get_variant
from service.engine.journal import FeedEntry, Replay
from service.game.record import CorruptGame, StoredGame


def replay(game: StoredGame, journal: str, *, after: int | None = None
           ) -> tuple[Replay, list[FeedEntry]]:
    """The game replayed through its journal (every version), checked against what is
    stored (one token per version, replaying to the stored snapshot), and the feed
    entries of the versions after ``after`` (none if ``after`` is None)."""
    record = game.record
    entries = []
    try:
        replayed = Replay(get_variant(record.variant), record.seed)
        for entry in replayed.run(journal):
            if after is not None and entry.version > after:
                entries.append(entry)
    except (InvalidMoveError, KeyError, TypeError) as error:
        raise CorruptGame(f"a stored journal is corrupt: {error!r}") from None
    if replayed.version != game.version:
        raise CorruptGame(f"a stored journal holds {replayed.version} versions, "
                          f"the game is at {game.version}")
    if replayed.state.to_dict() != record.state:
        raise CorruptGame("a stored journal does not replay to its position")
    return replayed, entries
