-- wrk script of `python -m bench http` (bench/http/client.py writes the data files).
--
--   wrk -t T -c C ... -s bench/http/wrk.lua URL -- MODE FILE EXPECTED_STATUS
--
-- MODE:
--   paths  FILE: GET every path of FILE (one a line, optionally followed by its headers:
--                `path TAB Name: value TAB ...`, a player's `Authorization` say) in
--                turn, each thread from its own offset;
--   posts  FILE: POST (no body) to every path of FILE in turn, the threads far apart;
--   create FILE: POST /v1/games with every body of FILE (one a line) in turn;
--   moves  FILE: POST /v1/games/<id>/moves with precomputed legal moves.  A FILE line is
--                lane TAB path TAB token TAB version TAB move TAB move ...: the game's
--                moves from `version` on.  Thread N plays the games of lane N, each with
--                at most one request in flight (a thread has more games than
--                connections), with `If-Match: "<version>"`; the request's X-Request-ID
--                (which the service echoes) names the game, so that its answer moves the
--                game on (200) or resynchronises it (a 412 names the real version).
-- done() prints one line `BENCH_RESULT {json}` with the counts and the latencies (µs).

local threads = {}
local next_lane = 0

function setup(thread)
  thread:set("lane", next_lane)
  next_lane = next_lane + 1
  table.insert(threads, thread)
end

local function split(line)
  local fields = {}
  for field in string.gmatch(line, "[^\t]+") do
    fields[#fields + 1] = field
  end
  return fields
end

local mode, expected
local items = {}      -- paths, bodies or games
local index = 0
ok, bad, exhausted, statuses = 0, 0, 0, ""
local seen = {}

function init(args)
  mode, expected = args[1], tonumber(args[3])
  for line in io.lines(args[2]) do
    if mode == "moves" then
      local fields = split(line)
      if tonumber(fields[1]) == lane then
        local moves = {}
        for i = 5, #fields do moves[#moves + 1] = fields[i] end
        local game = {
          path = fields[2],
          headers = {["Authorization"] = "Bearer " .. fields[3],
                     ["Content-Type"] = "application/json",
                     ["X-Request-ID"] = "g" .. (#items + 1)},
          version = tonumber(fields[4]),
          moves = moves,
          pos = 1,
          busy = false,
        }
        items[#items + 1] = game
      end
    elseif mode == "paths" and line ~= "" then
      local fields = split(line)
      local headers = {}
      for i = 2, #fields do
        local name, value = string.match(fields[i], "^([^:]+):%s*(.*)$")
        headers[name] = value
      end
      items[#items + 1] = wrk.format("GET", fields[1], headers)
    elseif line ~= "" then
      items[#items + 1] = line
    end
  end
  if #items > 0 then
    index = lane % #items  -- threads start apart
    if mode == "posts" then
      index = (lane * 509) % #items  -- so that two threads rarely write one key at once
    end
  end
end

local function next_move()
  for _ = 1, #items do
    index = index % #items + 1
    local game = items[index]
    if not game.busy and game.pos <= #game.moves then
      game.busy = true
      game.headers["If-Match"] = '"' .. (game.version + game.pos - 1) .. '"'
      return wrk.format("POST", game.path, game.headers, game.moves[game.pos])
    end
  end
  -- No game of this lane has a move left (or every one is in flight): count it, and
  -- read something cheap instead.
  exhausted = exhausted + 1
  return wrk.format("GET", "/healthz")
end

function request()
  if mode == "moves" then
    return next_move()
  end
  index = index % #items + 1
  if mode == "posts" then
    return wrk.format("POST", items[index])
  end
  if mode == "create" then
    return wrk.format("POST", "/v1/games", {["Content-Type"] = "application/json"},
                      items[index])
  end
  return items[index]  -- paths: each request made once, in init
end

function response(status, headers, body)
  local game = nil
  if mode == "moves" then
    local id = headers["X-Request-ID"] or headers["x-request-id"] or ""
    game = items[tonumber(string.match(id, "^g(%d+)$")) or 0]
    if game == nil then
      return  -- the healthz of an exhausted lane: counted already
    end
    game.busy = false
  end
  if status == expected then
    ok = ok + 1
    if game then game.pos = game.pos + 1 end
    return
  end
  bad = bad + 1
  seen[status] = (seen[status] or 0) + 1
  local parts = {}
  for code, count in pairs(seen) do parts[#parts + 1] = code .. ":" .. count end
  statuses = table.concat(parts, ",")
  if game and status == 412 then
    local at = tonumber(string.match(body or "", "at version (%d+)"))
    if at then game.pos = at - game.version + 1 end
  end
end

function done(summary, latency, requests)
  local total_ok, total_bad, total_exhausted, codes = 0, 0, 0, {}
  for _, thread in ipairs(threads) do
    total_ok = total_ok + (thread:get("ok") or 0)
    total_bad = total_bad + (thread:get("bad") or 0)
    total_exhausted = total_exhausted + (thread:get("exhausted") or 0)
    local text = thread:get("statuses") or ""
    for code, count in string.gmatch(text, "(%d+):(%d+)") do
      codes[code] = (codes[code] or 0) + tonumber(count)
    end
  end
  local parts = {}
  for code, count in pairs(codes) do parts[#parts + 1] = code .. ":" .. count end
  local errors = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests": %d, "duration_us": %d, "p50_us": %d, "p90_us": %d, ' ..
    '"p99_us": %d, "max_us": %d, "connect": %d, "read": %d, "write": %d, "timeout": %d, ' ..
    '"http_errors": %d, "ok": %d, "bad": %d, "exhausted": %d, "statuses": "%s"}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, errors.connect, errors.read, errors.write,
    errors.timeout, errors.status, total_ok, total_bad, total_exhausted,
    table.concat(parts, ",")))
end
