"""Storage: everything that talks to Redis about games, behind the game repository.

:mod:`.game_store` is the repository (:class:`~.game_store.GameStore`, and the one error every
Redis failure becomes, :class:`~.game_store.StorageUnavailable`); :mod:`.solver` keeps the
solver's pools, jobs and analyses beside the games; :mod:`.player_store` the players'
profiles, lists and statistics (docs/players.md).  They talk to Redis through a
:class:`~.backend.Backend`: one Redis or a Redis Cluster, chosen once from the URL
(:func:`~.backend.open_backend`), which also runs every Lua script
(:class:`~.backend.Script`).  Under them: :mod:`.keys` names every key and channel,
:mod:`.scripts` holds the Lua scripts, :mod:`.connections` the connections of the
request path (:class:`~.connections.Connections`, the one interface of both modes) and
:mod:`.cluster` the Redis Cluster mode.  Nothing else of the service talks to Redis
about games; the live feed (:mod:`service.live`) holds its own pub/sub subscription, on
a connection that the backend makes.  Storage knows nothing of the game layer above it:
a record is a JSON object here.  This module imports nothing.
"""
