-- wrk script of `python -m bench players` (bench/players/load.py writes the data files).
--
--   wrk -t T -c C ... -s bench/players/wrk.lua URL -- FILE EXPECTED_STATUS
--
-- FILE: one request a line, `path TAB Name: value TAB Name: value ...` (the headers of
-- the request: a player's `Authorization`, an `Accept`); every thread GETs the lines in
-- turn, each from its own offset.
-- done() prints one line `BENCH_RESULT {json}` with the counts and the latencies (µs),
-- as bench/http/wrk.lua does.

local threads = {}
local next_lane = 0

function setup(thread)
  thread:set("lane", next_lane)
  next_lane = next_lane + 1
  table.insert(threads, thread)
end

local expected
local requests = {}
local index = 0
ok, bad, statuses = 0, 0, ""
local seen = {}

function init(args)
  expected = tonumber(args[2])
  for line in io.lines(args[1]) do
    if line ~= "" then
      local path, headers = nil, {}
      for field in string.gmatch(line, "[^\t]+") do
        if path == nil then
          path = field
        else
          local name, value = string.match(field, "^([^:]+):%s*(.*)$")
          headers[name] = value
        end
      end
      requests[#requests + 1] = wrk.format("GET", path, headers)
    end
  end
  index = lane % #requests  -- threads start apart
end

function request()
  index = index % #requests + 1
  return requests[index]
end

function response(status, headers, body)
  if status == expected then
    ok = ok + 1
    return
  end
  bad = bad + 1
  seen[status] = (seen[status] or 0) + 1
  local parts = {}
  for code, count in pairs(seen) do parts[#parts + 1] = code .. ":" .. count end
  statuses = table.concat(parts, ",")
end

function done(summary, latency, requests)
  local total_ok, total_bad, codes = 0, 0, {}
  for _, thread in ipairs(threads) do
    total_ok = total_ok + (thread:get("ok") or 0)
    total_bad = total_bad + (thread:get("bad") or 0)
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
    '"http_errors": %d, "ok": %d, "bad": %d, "exhausted": 0, "statuses": "%s"}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, errors.connect, errors.read, errors.write,
    errors.timeout, errors.status, total_ok, total_bad, table.concat(parts, ",")))
end
