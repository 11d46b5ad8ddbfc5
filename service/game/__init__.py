"""Games between HTTP and the rules engine (docs/architecture.md), one module a job:

- :mod:`.record`: the stored game (:class:`GameRecord`) and the public Game it renders;
- :mod:`.commands`: create, move, undo, autoplay, delete as pure functions returning a
  :class:`Change`;
- :mod:`.pipeline`: the one write pipeline every write goes through;
- :mod:`.idempotency`: the sealed first answers of writes with an Idempotency-Key;
- :mod:`.replay`: a game replayed through its journal;
- :mod:`.errors`: the service's refusals;
- :mod:`.application`: :class:`Games`, what each endpoint does.
"""
