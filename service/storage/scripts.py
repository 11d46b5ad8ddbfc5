"""The Lua scripts of the store: each runs on one hash slot, atomically.

- :data:`COMMIT`: every write of a game (:meth:`GameStore.commit
  <service.storage.game_store.GameStore.commit>`);
- :data:`CLAIM`: the id a create with an ``Idempotency-Key`` makes
  (:meth:`~service.storage.game_store.GameStore.create_target`);
- :data:`TOUCH`: an idempotency record's expiry written again, for ``WAIT`` to confirm;
- :data:`KEEP_ANALYSIS`: an analysis kept with its game
  (:meth:`~service.storage.solver.SolverStore.keep_analysis`);
- :data:`RATE_COUNT`: a request counted by the rate limiter
  (:mod:`service.storage.rate_limits`);
- :data:`CLEAR_OUTBOX`: an applied event taken out of its game's outbox;
- the player's (:mod:`service.storage.player_store`): :data:`NEW_PLAYER`,
  :data:`PROJECT` (an owned game's event applied to its player's keys, once),
  :data:`GAMES_PAGE` (a page of "my games", its token checked in the same script),
  :data:`REINDEX_PLAYER` (a list's indexes built again), :data:`SET_TOKEN`,
  :data:`DROP_PLAYER`.
"""

from service.storage import keys

# KEYS: game hash, stats hash, outbox hash, pending outbox set, [idempotency record]
# ARGV: 1 expected version ('' = the game must not exist), 2 new version ('' = delete
#       the game), 3 new record, 4 journal tokens to append ('' = none), 5 idempotency
#       record ('' = none), 6 idempotency TTL, 7 game TTL, 8 stats field to increment
#       ('' = none), 9 the game's channel, 10 '1' when the answer waits for replicas,
#       11 the deadline of a ranked game's write (ms since 1970 on Redis' clock, TIME;
#       '' = none): at or past it the write is refused ('closed'), 12 the game's id (for
#       the pending set), 13.. the outbox events of an owned game, name and payload
#       pairs (none: the outbox keys are not touched)
# The outbox entries are written with the game, so an owned game's event is never lost
# between the game's write and its player's or its board's (in other slots).
# A stored first answer, answered again while writes wait for replicas, first has its
# record's expiry written again: the replicas confirm that write, and with it the first
# one, which came before it.
COMMIT = """
local idem = KEYS[5]
if ARGV[5] ~= '' then
  local first = redis.call('GET', idem)
  if first then
    if ARGV[10] == '1' then
      local ttl = redis.call('PTTL', idem)
      if ttl > 0 then redis.call('PEXPIRE', idem, ttl) end
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
if ARGV[11] ~= '' then
  local clock = redis.call('TIME')
  if tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
      >= tonumber(ARGV[11]) then
    return {'closed', ''}
  end
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
  redis.call('SET', idem, ARGV[5], 'EX', ARGV[6])
end
if #ARGV > 12 then
  for i = 13, #ARGV, 2 do redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]) end
  redis.call('SADD', KEYS[4], ARGV[12])
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


# KEYS: the outbox hash, the pending set.  ARGV: 1 the game id, 2.. the events applied.
# Takes them out of the outbox; the game leaves the pending set once none is left.
CLEAR_OUTBOX = """
for i = 2, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SREM', KEYS[2], ARGV[1]) end
return 1
"""

# KEYS: the player's profile.  ARGV: field, value pairs.  1: made; 0: it exists already.
NEW_PLAYER = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""

# KEYS: 1 profile, 2 games zset, 3 summaries hash, 4 stats hash, 5 results zset of the
#       game's variant, 6 applied set, 7 the variant's index, 8.. the statuses'
#       indexes, then the variant's statuses' indexes (each in keys.GAME_STATUSES'
#       order: 8-11 and 12-15)
# ARGV: 1 game id, 2 event (created, claimed, ended, deleted), 3 the game's summary
#       (JSON), 4 variant, 5 status, 6 moves, 7 end time (ms, '' while playing),
#       8 win duration (ms, '' unless won with a first move), 9 the game's creation time
#       (ms): its place in the list is creation order (the time, then the player's
#       sequence modulo 1000 to part games of one millisecond)
# Answers 'gone' (no such player: nothing written), 'done' (applied before: nothing
# written) or 'applied'.  The marker of the event is written with its effect, so an
# event counts once however often it is applied.  The summary in the list only moves
# forward (playing -> over); a game's result counts once (marker '<id>:result'),
# whichever event brings it (ended, or the claim of a finished game); a deleted game
# leaves the list and never enters it again.  The indexes follow the list: a game
# enters its variant's and its status's with its place in the list, moves from the
# 'playing' ones to its result's (same place) when its summary does, and leaves them
# all with the list.  Streaks: in order of end time; a result
# that lands before the latest one counted has them counted again from the results.
_STATUS_OFFSETS = "{" + ", ".join(f"['{status}'] = {number}" for number, status
                                  in enumerate(keys.GAME_STATUSES)) + "}"

PROJECT = f"""
if redis.call('EXISTS', KEYS[1]) == 0 then return 'gone' end
local offsets = {_STATUS_OFFSETS}
local function index(id, status, score)
  local at = offsets[status]
  if at == nil then return end
  local mine = 8 + {len(keys.GAME_STATUSES)} + at
  if score then
    redis.call('ZADD', KEYS[8 + at], score, id)
    redis.call('ZADD', KEYS[mine], score, id)
  else
    redis.call('ZREM', KEYS[8 + at], id)
    redis.call('ZREM', KEYS[mine], id)
  end
end
local id, event = ARGV[1], ARGV[2]
local marker = id .. ':' .. event
if redis.call('SISMEMBER', KEYS[6], marker) == 1 then return 'done' end
redis.call('SADD', KEYS[6], marker)
local variant, status = ARGV[4], ARGV[5]
local playing = status == 'playing'
local deleted = redis.call('SISMEMBER', KEYS[6], id .. ':deleted') == 1
local old = redis.call('HGET', KEYS[3], id)
local old_status = nil
if old then old_status = cjson.decode(old)['status'] end
local was_playing = old_status == 'playing'
local in_play = variant .. ':in_play'
if event == 'deleted' then
  if old then
    redis.call('HDEL', KEYS[3], id)
    redis.call('ZREM', KEYS[2], id)
    redis.call('ZREM', KEYS[7], id)
    index(id, old_status, nil)
    if was_playing then redis.call('HINCRBY', KEYS[4], in_play, -1) end
  end
elseif not deleted then
  if not old then
    local seq = redis.call('HINCRBY', KEYS[1], '{keys.PLAYER_SEQUENCE}', 1)
    local place = tonumber(ARGV[9]) * 1000 + seq % 1000
    redis.call('ZADD', KEYS[2], place, id)
    redis.call('ZADD', KEYS[7], place, id)
    index(id, status, place)
    redis.call('HSET', KEYS[3], id, ARGV[3])
    if playing then redis.call('HINCRBY', KEYS[4], in_play, 1) end
  elseif was_playing and not playing then
    redis.call('HSET', KEYS[3], id, ARGV[3])
    index(id, 'playing', nil)
    index(id, status, redis.call('ZSCORE', KEYS[2], id))
    redis.call('HINCRBY', KEYS[4], in_play, -1)
  end
end
if (not playing) and event ~= 'deleted'
    and redis.call('SISMEMBER', KEYS[6], id .. ':result') == 0 then
  redis.call('SADD', KEYS[6], id .. ':result')
  redis.call('HINCRBY', KEYS[4], variant .. ':' .. status, 1)
  local won = status == 'won'
  if won then
    local moves = tonumber(ARGV[6])
    local fewest = tonumber(redis.call('HGET', KEYS[4], variant .. ':fewest_moves'))
    if not fewest or moves < fewest then
      redis.call('HSET', KEYS[4], variant .. ':fewest_moves', moves)
    end
    if ARGV[8] ~= '' then
      local took = tonumber(ARGV[8])
      local fastest = tonumber(redis.call('HGET', KEYS[4], variant .. ':fastest_ms'))
      if not fastest or took < fastest then
        redis.call('HSET', KEYS[4], variant .. ':fastest_ms', ARGV[8])
      end
    end
  end
  local at = tonumber(ARGV[7])
  local latest = redis.call('ZREVRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  local letter = 'l'
  if won then letter = 'w' elseif status == 'resigned' then letter = 'r' end
  redis.call('ZADD', KEYS[5], at, letter .. ':' .. id)
  local streak_key, longest_key = variant .. ':streak', variant .. ':longest_streak'
  if #latest == 0 or tonumber(latest[2]) <= at then
    local streak = 0
    if won then streak = tonumber(redis.call('HGET', KEYS[4], streak_key) or '0') + 1 end
    redis.call('HSET', KEYS[4], streak_key, streak)
    local longest = tonumber(redis.call('HGET', KEYS[4], longest_key) or '0')
    if streak > longest then redis.call('HSET', KEYS[4], longest_key, streak) end
  else
    local streak, longest = 0, 0
    for _, member in ipairs(redis.call('ZRANGE', KEYS[5], 0, -1)) do
      if string.sub(member, 1, 1) == 'w' then
        streak = streak + 1
        if streak > longest then longest = streak end
      else
        streak = 0
      end
    end
    redis.call('HSET', KEYS[4], streak_key, streak, longest_key, longest)
  end
end
return 'applied'
"""

# KEYS: 1 the player's profile, 2 the list or the index of the filter, 3 summaries hash.
# ARGV: 1 the cursor (the position after which to go on, '' from the top), 2 the most
#       items, 3 what to put between two summaries, 4 '1' when KEYS[2] is an index,
#       5 '1' to answer the stored token's hash too.
# Answers {'unindexed'} (the player's indexes are not built: REINDEX_PLAYER), or {the
# next cursor ('' at the end), the summaries joined by ARGV[3], the token's hash (only
# when ARGV[5] asks)}: newest first, from the cursor on, at most ARGV[2]; when ARGV[5]
# asks and there is no token (no such player, or revoked), {'', '', ''} at once.
# The caller compares the hash (in constant time) before it uses the page.
GAMES_PAGE = f"""
local profile = redis.call('HMGET', KEYS[1], '{keys.PLAYER_TOKEN}', '{keys.PLAYER_INDEXED}')
local hash = ''
if ARGV[5] == '1' then
  hash = profile[1] or ''
  if hash == '' then return {{'', '', ''}} end  -- no such player, or no token: refused
end
if ARGV[4] == '1' and not profile[2] then return {{'unindexed'}} end
local top = '+inf'
if ARGV[1] ~= '' then top = '(' .. ARGV[1] end
local want = tonumber(ARGV[2])
-- The page and the next id (is there more?) in one read; the cursor is the place of
-- the last one answered.
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[2], top, '-inf', 'LIMIT', 0, want + 1)
if #ids == 0 then return {{'', '', hash}} end
local following = ''
if #ids > want then
  ids[#ids] = nil
  following = redis.call('ZSCORE', KEYS[2], ids[want])
end
local summaries = redis.call('HMGET', KEYS[3], unpack(ids))
local found = {{}}
for i = 1, #ids do
  if summaries[i] then found[#found + 1] = summaries[i] end
end
return {{following, table.concat(found, ARGV[3]), hash}}
"""

# KEYS: 1 the player's profile, 2 games zset, 3 summaries hash, 4.. every index of the
#       player (keys.player_indexes: the variants', the statuses', each variant's
#       statuses').  ARGV: the variants, in the order of their indexes.
# The indexes built again from the list and its summaries, and the profile marked as
# indexed: for a list written before the indexes were.  0: no such player.
REINDEX_PLAYER = f"""
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local offsets = {_STATUS_OFFSETS}
local variants, nvariants, nstatuses = {{}}, #ARGV, 0
for number, variant in ipairs(ARGV) do variants[variant] = number - 1 end
for _ in pairs(offsets) do nstatuses = nstatuses + 1 end
redis.call('DEL', unpack(KEYS, 4))
local cursor = '+inf'
while true do
  local ids = redis.call('ZREVRANGEBYSCORE', KEYS[2], cursor, '-inf', 'WITHSCORES',
                         'LIMIT', 0, 500)
  if #ids == 0 then break end
  local names = {{}}
  for i = 1, #ids, 2 do names[#names + 1] = ids[i] end
  local summaries = redis.call('HMGET', KEYS[3], unpack(names))
  for i = 1, #names do
    local summary = summaries[i]
    if summary then
      local decoded = cjson.decode(summary)
      local variant, status = variants[decoded['variant']], offsets[decoded['status']]
      local place = ids[2 * i]
      if variant ~= nil then redis.call('ZADD', KEYS[4 + variant], place, names[i]) end
      if status ~= nil then
        redis.call('ZADD', KEYS[4 + nvariants + status], place, names[i])
        if variant ~= nil then
          redis.call('ZADD', KEYS[4 + nvariants + nstatuses + variant * nstatuses + status],
                     place, names[i])
        end
      end
    end
  end
  cursor = '(' .. ids[#ids]
end
redis.call('HSET', KEYS[1], '{keys.PLAYER_INDEXED}', '1')
return 1
"""

# KEYS: every key of a player.  Deletes them all.
DROP_PLAYER = """
return redis.call('DEL', unpack(KEYS))
"""

# KEYS: the player's profile.  ARGV: 1 the token's field, 2 the new token's hash ('' =
# revoke).  0: no such player (nothing written).
SET_TOKEN = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return 1
"""


# The daily deal's boards (:mod:`service.storage.daily_store`), every key in the slot of
# its variant, ``{daily:<variant>}``.
#
# A day's board (``<day>:board``) holds each entry as its member: the player's id, then
# the entry in its answer's form but for its rank (its JSON, from its opening brace).
# Its score is the game's; a player's id holds no brace, so the ties (equal scores) are
# in order of player, as the ids are.  The day's ``<day>:entries`` hash holds per player
# the entry's score, as the board has it.  A board written by an older version of these
# scripts holds the player's id alone as the member and the entry in the hash (a
# player's id, a brace, or a hash value that opens with one, tells the two apart); the
# reads below read both, each tie still in order of player.
#
# DAY_BOARD_LUA: what the day's board's reads share.  id_of: a member's player.
# before: a byte order (not the locale's, which Lua's < follows).  place: the rank of the
# first entry at or after (after: strictly after) the player among the entries of
# ``score``, by bisection of those ties (each probe one rank read).  rows_of: the
# entries of ``members`` (every ``step``-th item) ranked from ``rank``: unless
# ``as_rows``, when every member holds its entry, the members as they are joined by the
# separator and 'm' (the store makes the rows: cheaper in Python than in Lua, whose
# every new string is hashed); else their answer rows joined by commas and '1', or,
# when an entry of the older form lacks its ``game_url``, every entry's stored JSON
# ('{}' for one missing) joined by the separator and '' (the rows are made in Python).
DAY_BOARD_LUA = """
local function id_of(member)
  local at = string.find(member, '{', 1, true)
  if at then return string.sub(member, 1, at - 1) end
  return member
end
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local function place(board, score, player, after)
  local lo = redis.call('ZCOUNT', board, '-inf', '(' .. score)
  local hi = lo + redis.call('ZCOUNT', board, score, score)
  if hi - lo == 1 and not after then return lo end
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local id = id_of(redis.call('ZRANGE', board, mid, mid)[1])
    if before(id, player) or (after and id == player) then lo = mid + 1 else hi = mid end
  end
  return lo
end
local function rows_of(members, step, rank, entries, separator, as_rows)
  if not as_rows then
    local whole, picked = true, members
    if step > 1 then
      picked = {}
      for i = 1, #members, step do picked[#picked + 1] = members[i] end
    end
    for i = 1, #picked do
      if not string.find(picked[i], '{', 1, true) then whole = false break end
    end
    if whole then return table.concat(picked, separator), 'm' end
  end
  local rows, older, at = {}, {}, {}
  for i = 1, #members, step do
    local member = members[i]
    local brace = string.find(member, '{', 1, true)
    if brace then
      rows[#rows + 1] = '{"rank":' .. (rank + #rows) .. ',' .. string.sub(member, brace + 1)
    else
      rows[#rows + 1] = false
      older[#older + 1] = member
      at[#older] = #rows
    end
  end
  if #older == 0 then return table.concat(rows, ','), '1' end
  local found = redis.call('HMGET', entries, unpack(older))
  local whole = true
  for i = 1, #older do
    local entry, row = found[i], at[i]
    if not entry or string.byte(entry, 1) ~= 123 then
      rows[row] = '{"rank":' .. (rank + row - 1) .. '}'
      found[i] = '{}'
    elseif string.find(entry, '"game_url":"', 1, true) then
      rows[row] = '{"rank":' .. (rank + row - 1) .. ',' .. string.sub(entry, 2)
    else
      whole = false
    end
  end
  if whole then return table.concat(rows, ','), '1' end
  local stored, next_older = {}, 1
  for i = 1, #members, step do
    local member = members[i]
    local brace = string.find(member, '{', 1, true)
    if brace then
      stored[#stored + 1] = string.sub(member, brace)
    else
      stored[#stored + 1] = found[next_older]
      next_older = next_older + 1
    end
  end
  return table.concat(stored, separator), ''
end
"""

# KEYS: 1 the day's entries hash, 2 the day's board zset, 3 the week's hash, 4 the
#       week's board zset, 5 the streaks hash, 6 the streaks board zset, 7 the day's
#       feed stream, 8 the days zset, 9 the day's top pages (BOARD_TOP)
# ARGV: 1 player, 2 entry (JSON), 3 score, 4 '1' when won, 5 moves, 6 the day's index,
#       7 the top whose changes are events (DAILY_LIVE_TOP), 8 the feed's length kept,
#       9 the day's id, 10 the board's channel, 11 the ranks the top pages hold (the
#       largest page's limit), 12 the form the entry is written in: 'entries' or
#       'players' (DailyStore's board_form)
# Answers 'done' (this player's entry is there: nothing written) or 'applied'.  The
# player's field in the entries hash is the marker: a player has one ranked game a
# day, so its end is written once however often it is applied.  The entry goes on the
# board as its member (the player's id, then the entry: DAY_BOARD_LUA) with its score
# in the hash; in the form 'players', the older form, the player's id alone is the
# member and the entry is in the hash, as the scripts of older versions write and
# read it (every version's reads read it: a rolling upgrade from one of those writes
# it until no process of theirs is left).  An entry that
# lands within the top pages (or right after the largest: its next cursor) deletes
# them, in the same script.  A win also counts in the week (days won, then their moves:
# score -won * 10^9 + moves) and the streaks (consecutive days won).  An entry that lands
# in the top ARGV[7], or moves others within it, is added to the day's feed,
# and its id published on the board's channel, in the same script (its followers,
# :mod:`service.live.board`).
PROJECT_BOARD = """
local member, marker = ARGV[1] .. ARGV[2], ARGV[3]
if ARGV[12] == 'players' then member, marker = ARGV[1], ARGV[2] end
if redis.call('HSETNX', KEYS[1], ARGV[1], marker) == 0 then return 'done' end
redis.call('ZADD', KEYS[2], ARGV[3], member)
redis.call('ZADD', KEYS[8], ARGV[6], ARGV[9])
if ARGV[4] == '1' then
  local entry = cjson.decode(ARGV[2])
  local week = {won = 0, moves = 0, player_id = ARGV[1], name = entry.name}
  local stored = redis.call('HGET', KEYS[3], ARGV[1])
  if stored then week = cjson.decode(stored) end
  week.won = week.won + 1
  week.moves = week.moves + tonumber(ARGV[5])
  redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(week))
  redis.call('ZADD', KEYS[4], tostring(-week.won * 1000000000 + week.moves), ARGV[1])
  local streak = {current = 0, longest = 0, last = -1, player_id = ARGV[1],
                  name = entry.name}
  stored = redis.call('HGET', KEYS[5], ARGV[1])
  if stored then streak = cjson.decode(stored) end
  local day = tonumber(ARGV[6])
  if day == streak.last + 1 then
    streak.current = streak.current + 1
  elseif day > streak.last then
    streak.current = 1
  end
  if day > streak.last then streak.last = day end
  if streak.current > streak.longest then streak.longest = streak.current end
  redis.call('HSET', KEYS[5], ARGV[1], cjson.encode(streak))
  redis.call('ZADD', KEYS[6], tostring(-streak.longest), ARGV[1])
end
local rank = redis.call('ZRANK', KEYS[2], member)
if rank <= tonumber(ARGV[11]) then redis.call('DEL', KEYS[9]) end
if rank < tonumber(ARGV[7]) then
  local id = redis.call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[8], '*', 'player', ARGV[1],
                        'rank', rank + 1, 'entry', ARGV[2])
  redis.call('PUBLISH', ARGV[10], id)
end
return 'applied'
"""

# KEYS: 1 a week's or the streaks' board zset (member: the player), 2 its hash (the
# player's figures).  ARGV: 1 the cursor's score ('' from the top), 2 the cursor's
# player, 3 the most entries, 4 the separator of the entries.
# Answers {next score, next player ('' '' at the end), the board's size, the rank of
# the first entry less one, the entries}: in order of score then player, those after the
# cursor, their stored JSON as it is ('{}' for one missing) joined by the separator.
# The page starts at the cursor's player's place when the player is there with the
# cursor's score; else (the player's score has changed since) after every entry of a
# lower score and every one of the same score up to the player.
BOARD_PAGE = """
local want = tonumber(ARGV[3])
local start = 0
local members
if ARGV[1] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
  if score and tonumber(score) == tonumber(ARGV[1]) then
    start = redis.call('ZRANK', KEYS[1], ARGV[2]) + 1
  else
    local after, player = tonumber(ARGV[1]), ARGV[2]
    local below = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[1])
    start = below
    local ties = redis.call('ZRANGE', KEYS[1], ARGV[1], ARGV[1], 'BYSCORE')
    for i = 1, #ties do
      if ties[i] > player then break end
      start = below + i
    end
  end
end
members = redis.call('ZRANGE', KEYS[1], start, start + want, 'WITHSCORES')
local page = {'', '', redis.call('ZCARD', KEYS[1]), start, ''}
local take = math.min(#members / 2, want)
if #members / 2 > want then page[1], page[2] = members[2 * want], members[2 * want - 1] end
if take == 0 then return page end
local names = {}
for i = 1, take do names[i] = members[2 * i - 1] end
local entries = redis.call('HMGET', KEYS[2], unpack(names))
for i = 1, take do entries[i] = entries[i] or '{}' end
page[5] = table.concat(entries, ARGV[4])
return page
"""

# KEYS: 1 a week's or the streaks' board zset (member: the player), 2 its hash (the
# player's figures).  ARGV: 1 the player, 2 the entries either side (k), 3 the
# separator of the entries.
# Answers {} when the player has no entry, else {the player's rank, the board's size,
# the rank of the first entry either side less one, the entries}: the player's and the
# k either side in order of score then player, their stored JSON as it is ('{}' for
# one missing) joined by the separator, as BOARD_PAGE gives a page's.
BOARD_AROUND = """
local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
if not rank then return {} end
local k = tonumber(ARGV[2])
local first = math.max(0, rank - k)
local members = redis.call('ZRANGE', KEYS[1], first, rank + k)
local entries = redis.call('HMGET', KEYS[2], unpack(members))
for i = 1, #members do entries[i] = entries[i] or '{}' end
return {rank + 1, redis.call('ZCARD', KEYS[1]), first, table.concat(entries, ARGV[3])}
"""

# DAY_PAGE_LUA: a page of a day's board from the rank ``start`` (locals of the script
# it ends: ``start``, ``want``, ``count``, ``separator``, ``as_rows``), ``want`` entries
# at most: {next score, next player ('' '' at the end), the board's size, the rank of
# the first entry less one, the entries and their form (DAY_BOARD_LUA's rows_of)}.
# The next cursor is the page's last entry.
DAY_PAGE_LUA = """
local members = redis.call('ZRANGE', KEYS[1], start, start + want, 'WITHSCORES')
local page = {'', '', count, start, '', ''}
local take = math.min(#members / 2, want)
if #members / 2 > want then
  page[1], page[2] = members[2 * want], id_of(members[2 * want - 1])
  members[2 * want + 1], members[2 * want + 2] = nil, nil
end
if take > 0 then
  page[5], page[6] = rows_of(members, 2, start + 1, KEYS[2], separator, as_rows)
end
"""

# KEYS: 1 a day's board zset, 2 its entries hash.  ARGV: 1 the cursor's score ('' from
# the top), 2 the cursor's player, 3 the most entries, 4 the separator of the entries.
# Answers DAY_PAGE_LUA's page of the entries after the cursor's, in order of score then
# player (a day's scores never change: the cursor's player is at its place, or, for a
# cursor made up, the place it would have).
DAY_PAGE = DAY_BOARD_LUA + """
local want, separator, as_rows = tonumber(ARGV[3]), ARGV[4], false
local count = redis.call('ZCARD', KEYS[1])
local start = 0
if ARGV[1] ~= '' then start = place(KEYS[1], ARGV[1], ARGV[2], true) end
""" + DAY_PAGE_LUA + """
return page
"""

# KEYS: 1 a day's board zset, 2 its entries hash.  ARGV: 1 player, 2 k, 3 the separator
# of the entries.
# Answers {} when the player has no entry, else {rank, count, the rank of the first
# entry less one, the entries, their form}: the player's rank, the board's size, and
# the k entries either side (DAY_BOARD_LUA's rows_of).  The
# player's place is found from their score (the entries hash), among the entries of
# that score; the older form's (its entry in the hash) by its member.
DAY_AROUND = DAY_BOARD_LUA + """
local stored = redis.call('HGET', KEYS[2], ARGV[1])
if not stored then return {} end
local rank
if string.byte(stored, 1) == 123 then
  rank = redis.call('ZRANK', KEYS[1], ARGV[1])
  if not rank then return {} end
else
  rank = place(KEYS[1], stored, ARGV[1], false)
end
local k = tonumber(ARGV[2])
local first = math.max(0, rank - k)
local members = redis.call('ZRANGE', KEYS[1], first, rank + k)
if not members[rank - first + 1] or id_of(members[rank - first + 1]) ~= ARGV[1] then
  return {}
end
local entries, form = rows_of(members, 1, first + 1, KEYS[2], ARGV[3], false)
return {rank + 1, redis.call('ZCARD', KEYS[1]), first, entries, form}
"""

# KEYS: 1 a day's board zset, 2 its entries hash, 3 its top pages hash.  ARGV: 1 the
# most entries (at most the ranks PROJECT_BOARD keeps the pages for), 2 the separator
# of the entries.
# Answers DAY_PAGE_LUA's page for the board's first page.  The top pages hash holds,
# per limit, the page's answer ('m<limit>'), its next cursor's score and player
# ('m<limit>:s', 'm<limit>:p') and the board's size when it was made ('m<limit>:n'):
# fields of their own, never those an older version of this script kept (named
# '<limit>'..., made from the older form's entries alone); a
# page it lacks is read from the board, made the answer's rows here and, when every
# entry has its URL, kept.  PROJECT_BOARD deletes the hash when an entry lands within
# the pages, in the same script.  A kept page is answered only while it is the
# board's: a day's entries are only ever added, each pushing those after it down, so
# no entry landed within a page of <limit> while the player at its last rank is the one
# it had (a board of more entries than the page), or while the board's size is the one
# it had (a board the page holds whole); else it is made again.  So an entry written
# by any other means (a process of an older version of the board's script) never
# hides behind a kept page either, and a page read with the board's size is never
# older than the board's state that size is of.  A page that cannot be kept (the hash
# refused: maxmemory) is answered all the same.
BOARD_TOP = DAY_BOARD_LUA + """
local want, separator, as_rows = tonumber(ARGV[1]), ARGV[2], true
local count = redis.call('ZCARD', KEYS[1])
local field = 'm' .. ARGV[1]
local kept = redis.call('HMGET', KEYS[3], field, field .. ':s', field .. ':p', field .. ':n')
if kept[1] then
  local fresh
  if kept[3] ~= '' then
    local last = redis.call('ZRANGE', KEYS[1], want - 1, want - 1)[1]
    fresh = last ~= nil and id_of(last) == kept[3]
  else
    fresh = tostring(count) == kept[4]
  end
  if fresh then return {kept[2], kept[3], count, 0, kept[1], '1'} end
end
local start = 0
""" + DAY_PAGE_LUA + """
if page[6] == '1' then
  redis.pcall('HSET', KEYS[3], field, page[5], field .. ':s', page[1], field .. ':p',
              page[2], field .. ':n', count)
end
return page
"""
