"""The Lua scripts of the store: each runs on one hash slot, atomically.

- :data:`COMMIT`: every write of a game (:meth:`GameStore.commit
  <service.storage.game_store.GameStore.commit>`);
- :data:`CLAIM`: the id a create with an ``Idempotency-Key`` makes
  (:meth:`~service.storage.game_store.GameStore.create_target`);
- :data:`TOUCH`: an idempotency record's expiry written again, for ``WAIT`` to confirm;
- :data:`KEEP_ANALYSIS`: an analysis kept with its game
  (:meth:`~service.storage.solver.SolverStore.keep_analysis`);
- :data:`RATE_COUNT`: a request counted by the rate limiter
  (:mod:`service.storage.rate_limits`).
"""

from service.storage import keys

# KEYS: game hash, stats hash, [idempotency record]
# ARGV: 1 expected version ('' = the game must not exist), 2 new version ('' = delete
#       the game), 3 new record, 4 journal tokens to append ('' = none), 5 idempotency
#       record ('' = none), 6 idempotency TTL, 7 game TTL, 8 stats field to increment
#       ('' = none), 9 the game's channel, 10 '1' when the answer waits for replicas
# A stored first answer, answered again while writes wait for replicas, first has its
# record's expiry written again: the replicas confirm that write, and with it the first
# one, which came before it.
COMMIT = """
if ARGV[5] ~= '' then
  local first = redis.call('GET', KEYS[3])
  if first then
    if ARGV[10] == '1' then
      local ttl = redis.call('PTTL', KEYS[3])
      if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
    end
    return {'answered', first}
  end
end
local current = redis.call('HGET', KEYS[1], 'v')
if ARGV[1] == '' then
  if current then return {'conflict', current} end
elseif not current then
  return {'missing', ''}
elseif current ~= ARGV[1] then
  return {'conflict', current}
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  if ARGV[4] ~= '' then
    local journal = redis.call('HGET', KEYS[1], 'j') or ''
    redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3], 'j', journal .. ARGV[4])
  else
    redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
  end
  redis.call('EXPIRE', KEYS[1], ARGV[7])
end
if ARGV[8] ~= '' then
  redis.call('HINCRBY', KEYS[2], ARGV[8], 1)
end
if ARGV[5] ~= '' then
  redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[6])
end
if ARGV[2] == '' then
  redis.call('PUBLISH', ARGV[9], 'deleted')
elseif ARGV[2] ~= current then
  redis.call('PUBLISH', ARGV[9], ARGV[2])
end
return {'ok', ARGV[2]}
"""

# KEYS: the create target of an Idempotency-Key.  ARGV: 1 the id to claim, 2 its TTL.
# Answers the id in force: the one claimed first (its expiry written again, for a WAIT
# to confirm), else ARGV[1].
CLAIM = """
local current = redis.call('GET', KEYS[1])
if current then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
  return current
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return ARGV[1]
"""

# KEYS: an idempotency record.  Writes its expiry again, for WAIT to confirm.
TOUCH = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return ttl
"""


# KEYS: the game hash.  ARGV: the analysis JSON.  1: stored now; 0: the game had one
# already; -1: no such game (deleted or expired meanwhile).
KEEP_ANALYSIS = f"""
if redis.call('HEXISTS', KEYS[1], '{keys.VERSION}') == 0 then return -1 end
return redis.call('HSETNX', KEYS[1], '{keys.ANALYSIS}', ARGV[1])
"""


# KEYS: the counter of a client's window.  ARGV: 1 the window's seconds, 2 the amount.
# The ``limits`` library's incr_expire.lua, answering the window's time to live (ms) too.
RATE_COUNT = """
local amount = tonumber(ARGV[2])
local current = redis.call('INCRBY', KEYS[1], amount)
if tonumber(current) == amount then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return {current, redis.call('PTTL', KEYS[1])}
"""
