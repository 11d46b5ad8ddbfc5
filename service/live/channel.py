"""A followed thing's channel in a process: its followers, and what they were handed, so
that each change is read once, and its item made once, for all of them (each wire then
frames the item once, :func:`service.live.wires.frame`).

A :class:`Channel` is named by its pub/sub channel (:attr:`Channel.name`, what the hub
subscribes to); what it follows reads itself: :class:`GameChannel`, a game's feed
replayed from its journal, and :class:`~service.live.board.BoardChannel`, a day's board's
feed read from its stream.
"""

from __future__ import annotations

from service.game.record import StoredGame
from service.game.replay import replay
from service.live.follower import Follower
from service.live.items import Item, deleted_item, end_item, entry_item, sync_item
from service.storage import keys
from service.storage.game_store import GameStore

#: Entries a starting channel hands out before its SYNC, for the followers that read the
#: feed a little earlier than the hub did.
RECENT = 32


class Channel:
    """The followers of one followed thing, and the items of what is new of it.  The hub
    holds its lock around every use but :meth:`read` and :meth:`exists` (one read of the
    store each, made outside the lock)."""

    __slots__ = ("followers", "name")

    def __init__(self, name: str):
        self.name = name
        self.followers: set[Follower] = set()

    def read(self):
        """What is stored now (None once it no longer exists); raises
        :class:`~service.storage.game_store.StorageUnavailable`."""
        raise NotImplementedError

    def advance(self, found) -> list[Item]:
        """The items of what ``found`` (a :meth:`read`) has that the channel has not handed
        out.  Raises when it cannot be made into items."""
        raise NotImplementedError

    def exists(self) -> bool:
        """Whether what the channel follows still exists (asked every heartbeat round:
        an expiry publishes nothing)."""
        return True

    def gone(self) -> Item | None:
        """The item that tells the followers it no longer exists (None: they are closed,
        and resume from their last id)."""
        return None

    def hand(self, items: list[Item]) -> None:
        """Give ``items`` to every follower, in order."""
        for follower in list(self.followers):
            for item in items:
                follower.push(item)

    def round(self, now: float) -> None:
        """A heartbeat round of every follower; those past their deadline leave."""
        for follower in list(self.followers):
            if not follower.round(now):
                self.followers.discard(follower)

    def close(self) -> None:
        for follower in list(self.followers):
            follower.close()


class GameChannel(Channel):
    """A game's channel: the game replayed as far as its followers were handed it."""

    __slots__ = ("game_id", "replayed", "seen", "store", "version")

    def __init__(self, store: GameStore[StoredGame], game_id: str):
        super().__init__(keys.channel(game_id))
        self.store = store
        self.game_id = game_id
        self.replayed = None  # the Replay at `version`; None until the hub read the game
        self.seen = 0  # characters of the journal replayed
        self.version = -1

    def read(self) -> tuple[StoredGame, str] | None:
        return self.store.load_with_journal(self.game_id)

    def exists(self) -> bool:
        return self.store.exists(self.game_id)

    def gone(self) -> Item:
        return deleted_item(self.game_id)

    def advance(self, found: tuple[StoredGame, str]) -> list[Item]:
        """The items of what the stored game has that the channel has not handed out (none
        when nothing is new).  A channel that starts (or a game deleted and created again)
        hands out its last few entries, then a ``SYNC`` at the stored version.  Raises
        when the journal cannot be replayed."""
        stored, journal = found
        if stored.version <= self.version:
            return []
        if self.replayed is None or len(journal) < self.seen:
            self.replayed, changes = replay(stored, journal,
                                            after=max(0, stored.version - RECENT))
            items = [entry_item(change) for change in changes]
            items.append(sync_item(stored.version))
        else:
            items = [entry_item(change) for change in self.replayed.run(journal[self.seen:])]
        self.seen = len(journal)
        self.version = stored.version
        if stored.record.is_over:
            items.append(end_item(self.game_id, stored))
        return items
