"""One game's channel in a process: its followers, and the game replayed as far as they
were handed it, so that each change is replayed once, and its item made once, for all of
them (each wire then frames the item once, :func:`service.live.wires.frame`)."""

from __future__ import annotations

from service.game.record import StoredGame
from service.game.replay import replay
from service.live.follower import Follower
from service.live.items import Item, end_item, entry_item, sync_item

#: Entries a starting channel hands out before its SYNC, for the followers that read the
#: game a little earlier than the hub did.
RECENT = 32


class Channel:
    """The followers of one game, and the items of each new version of it.  The hub holds
    its lock around every use."""

    __slots__ = ("followers", "game_id", "replayed", "seen", "version")

    def __init__(self, game_id: str):
        self.game_id = game_id
        self.followers: set[Follower] = set()
        self.replayed = None  # the Replay at `version`; None until the hub read the game
        self.seen = 0  # characters of the journal replayed
        self.version = -1

    def advance(self, stored: StoredGame, journal: str) -> list[Item]:
        """The items of what the stored game has that the channel has not handed out (none
        when nothing is new).  A channel that starts (or a game deleted and created again)
        hands out its last few entries, then a ``SYNC`` at the stored version.  Raises
        when the journal cannot be replayed."""
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
