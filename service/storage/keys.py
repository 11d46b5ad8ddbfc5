"""The names of everything the service keeps in Redis, defined once.

The service, the tests and the benchmark build every key and channel name with these
functions.  Every key of one game shares the Redis Cluster hash tag ``{<id>}``:

- :func:`game` HASH: field :data:`VERSION` the version, :data:`RECORD` the game record
  (JSON, :class:`service.game.record.GameRecord`), :data:`JOURNAL` the journal
  (:mod:`service.engine.journal`), and once the game is over and analysed,
  :data:`ANALYSIS` its analysis (the JSON answer of ``GET .../analysis``);
- :func:`analysis_claim` STRING with an expiry: held while one analysis of the game is
  under way (:mod:`service.solver.features`);
- :func:`write_idempotency` STRING: the sealed first answer of a write with an
  ``Idempotency-Key`` (:mod:`service.game.idempotency`);
- :func:`create_idempotency` STRING: the same for ``POST /v1/games``, in the slot of the
  game it created;
- :func:`create_target` STRING: the id of the game that a create with an
  ``Idempotency-Key`` makes, claimed before the game is stored (a key of its own hash
  tag, the key's digest), so that its retries find that game and its record;
- :data:`STATS` HASH: the statistics counters, fields :func:`stat`; on a Redis Cluster
  one such hash per hash slot, ``stats:{<tag>}`` in the slot of the games it counts
  (:func:`service.storage.slots.stats_key`);
- :func:`channel`: the game's pub/sub channel (no key, no memory); a day's board has one
  too, :func:`board_channel`;
- :func:`outbox` HASH: an owned game's events not yet applied to its player's keys, a
  field per event (``created``, ``claimed``, ``ended``, ``deleted``), written by the
  game's write script; with the game's id in :data:`OUTBOX` SET (on a Redis Cluster one
  such set per hash slot, ``outbox:{<tag>}`` in the slot of its games, like
  :data:`STATS`).

Every key of one player shares the hash tag ``{<player id>}`` (:mod:`service.players`):

- :func:`player` HASH: the profile (:data:`PLAYER_NAME`, :data:`PLAYER_CREATED`,
  :data:`PLAYER_TOKEN` the SHA-256 of the player token, absent once revoked,
  :data:`PLAYER_KIND`, :data:`PLAYER_ISSUER` and :data:`PLAYER_SUBJECT` for an
  OpenID Connect identity, :data:`PLAYER_SEQUENCE` a count of the games
  entered in :func:`player_games`, :data:`PLAYER_INDEXED` set once the player's
  indexes (:func:`player_index`) follow the list);
- :func:`player_games` ZSET: the player's game ids, scored by creation order (the
  creation time in ms, times 1000, plus the player's sequence modulo 1000);
- :func:`player_index` ZSET, one per variant, per status (:data:`GAME_STATUSES`) and
  per variant and status: the ids of :func:`player_games` that match, with the same
  scores (the filtered pages of "my games" read them);
- :func:`player_summaries` HASH: game id -> the game's summary (JSON);
- :func:`player_stats` HASH: the player's statistics, fields :func:`stat`;
- :func:`player_results` ZSET, one per variant: ``<w|l|r>:<game id>`` scored by the
  time the game ended (ms), from which the streaks are counted;
- :func:`player_applied` SET: ``<game id>:<event>`` for every event applied, so that
  an event applied twice counts once.

The daily deal's keys (:mod:`service.storage.daily_store`), :func:`daily`: every key of
a variant's daily deal in the slot of the hash tag ``{daily:<variant>}``.

The solver's keys (:mod:`service.storage.solver`), each used by one-key commands only:

- :func:`pool` SET, one per variant with the variant as hash tag: the proved-winnable
  seeds not dealt yet (secret, like the stock of a game in play);
- :data:`ANALYSIS_JOBS` LIST: ids of finished games whose analysis the worker computes.
"""

from __future__ import annotations

import hashlib

#: Fields of a game's hash.
VERSION, RECORD, JOURNAL, ANALYSIS = "v", "d", "j", "a"
#: The statistics counters of every variant.
STATS = "stats"
#: The games whose outbox holds events not yet applied (sharded by slot like STATS).
OUTBOX = "outbox"
#: Fields of a player's profile hash.
PLAYER_NAME, PLAYER_CREATED, PLAYER_TOKEN, PLAYER_KIND = "name", "created", "token", "kind"
PLAYER_ISSUER, PLAYER_SUBJECT, PLAYER_SEQUENCE = "iss", "sub", "seq"
PLAYER_INDEXED = "ix"
#: The statuses of a game in a player's list, each with its index (:func:`player_index`).
GAME_STATUSES = ("playing", "won", "lost", "resigned")
#: A ``SCAN MATCH`` pattern for every key of every game (its hash and its idempotency
#: records), the game id between the braces.
GAME_KEYS = "game:{*"


def game(game_id: str) -> str:
    return f"game:{{{game_id}}}"


def channel(game_id: str) -> str:
    return f"game:{{{game_id}}}:feed"


def board_channel(variant_id: str, day_id: str) -> str:
    """A day's board's pub/sub channel (no key, no memory): its feed's key's name."""
    return daily(variant_id, f"{day_id}:feed")


def outbox(game_id: str) -> str:
    return f"game:{{{game_id}}}:outbox"


def player(player_id: str) -> str:
    return f"player:{{{player_id}}}"


def player_games(player_id: str) -> str:
    return f"player:{{{player_id}}}:games"


def player_summaries(player_id: str) -> str:
    return f"player:{{{player_id}}}:summaries"


def player_index(player_id: str, variant_id: str | None = None,
                 status: str | None = None) -> str:
    """The player's games of ``variant_id`` and/or ``status`` (:func:`player_games`
    itself with neither)."""
    name = player_games(player_id)
    if variant_id is not None:
        name += f":variant:{variant_id}"
    if status is not None:
        name += f":status:{status}"
    return name


def player_indexes(player_id: str, variant_ids) -> list[str]:
    """Every index of the player (the variants', the statuses', then each variant's
    statuses), in the order the scripts take them."""
    return ([player_index(player_id, variant) for variant in variant_ids]
            + [player_index(player_id, status=status) for status in GAME_STATUSES]
            + [player_index(player_id, variant, status)
               for variant in variant_ids for status in GAME_STATUSES])


def player_stats(player_id: str) -> str:
    return f"player:{{{player_id}}}:stats"


def player_results(player_id: str, variant_id: str) -> str:
    return f"player:{{{player_id}}}:results:{variant_id}"


def player_applied(player_id: str) -> str:
    return f"player:{{{player_id}}}:applied"


def key_digest(idempotency_key: str) -> str:
    """How an Idempotency-Key appears in a key name: its SHA-256, never the key."""
    return hashlib.sha256(idempotency_key.encode()).hexdigest()


def write_idempotency(game_id: str, idempotency_key: str) -> str:
    return f"game:{{{game_id}}}:idem:{key_digest(idempotency_key)}"


def create_idempotency(game_id: str, idempotency_key: str) -> str:
    return f"game:{{{game_id}}}:idem:create:{key_digest(idempotency_key)}"


def create_target(idempotency_key: str) -> str:
    return f"create:idem:{{{key_digest(idempotency_key)}}}"


def stat(variant_id: str, name: str) -> str:
    """The field of :data:`STATS` that counts ``name`` (created, won, lost, resigned)."""
    return f"{variant_id}:{name}"


def analysis_claim(game_id: str) -> str:
    return f"game:{{{game_id}}}:analysing"


def pool(variant_id: str) -> str:
    """The pool of proved-winnable seeds of a variant (hash tag: the variant)."""
    return f"pool:{{{variant_id}}}"


def daily(variant_id: str, name: str) -> str:
    """A key of the daily deal of a variant (:mod:`service.storage.daily_store`): every
    one in the slot of the hash tag ``{daily:<variant>}``."""
    return f"daily:{{daily:{variant_id}}}:{name}"


#: The worker's list of analyses to compute.
ANALYSIS_JOBS = "analysis:jobs"
