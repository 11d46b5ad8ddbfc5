// The public /v1 API and nothing else: every URL this client fetches is built here
// (and in live.js, for the events feed).

export class ApiError extends Error {
  constructor(status, problem, retryAfter) {
    const detail = (problem && (problem.detail || problem.title)) || `HTTP ${status}`;
    super(detail);
    this.name = "ApiError";
    this.status = status;
    this.problem = problem || {};
    this.code = (problem && problem.code) || "";
    this.detail = detail;
    this.retryAfter = retryAfter;
  }

  // A 404 of a route this server does not have (as opposed to an unknown game): an
  // optional endpoint (events, hint, autoplay) that is not deployed here.
  get routeMissing() {
    return (this.status === 404 && this.code !== "game_not_found") || this.status === 405;
  }
}

// No answer at all: the server cannot be reached, or (timedOut) it did not answer
// within the request's time. Either is retried like a 503 (withRetry).
export class NetworkError extends Error {
  constructor(cause, { timedOut = false } = {}) {
    super(timedOut ? "The server did not answer in time." : "The server cannot be reached.");
    this.name = "NetworkError";
    this.cause = cause;
    this.timedOut = timedOut;
  }
}

// Milliseconds an exchange may take, from its start to the end of its body, before it is
// given up (and retried: reads are safe to repeat, writes carry their Idempotency-Key).
// A request that never gets an answer would otherwise leave the page waiting for good.
export const REQUEST_TIMEOUT_MS = 10000;

// Game.seed can be up to 2**64-1, beyond what a JS number holds exactly: keep its digits.
export function parseJson(text) {
  const data = JSON.parse(text, function reviver(key, value, context) {
    if (key === "seed" && typeof value === "number") {
      if (context && typeof context.source === "string") return context.source;
      if (Number.isSafeInteger(value)) return String(value);
      const m = /"seed"\s*:\s*(\d+)/.exec(text);
      return m ? m[1] : String(value);
    }
    return value;
  });
  return data;
}

export function newIdempotencyKey() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const enc = encodeURIComponent;

export const paths = {
  variants: () => "/v1/variants",
  games: () => "/v1/games",
  game: (id) => `/v1/games/${enc(id)}`,
  moves: (id) => `/v1/games/${enc(id)}/moves`,
  undo: (id) => `/v1/games/${enc(id)}/undo`,
  history: (id) => `/v1/games/${enc(id)}/history`,
  events: (id, after) => `/v1/games/${enc(id)}/events?after=${enc(String(after))}`,
  hint: (id) => `/v1/games/${enc(id)}/hint`,
  autoplay: (id) => `/v1/games/${enc(id)}/autoplay`,
  analysis: (id) => `/v1/games/${enc(id)}/analysis`,
  players: () => "/v1/players",
  me: () => "/v1/players/me",
  myGames: (query) => `/v1/players/me/games?${query}`,
  myStats: () => "/v1/players/me/stats",
  daily: () => "/v1/daily",
  dailyDay: (variant, day) => `/v1/daily/${enc(variant)}/${enc(day)}`,
  dailyBoard: (variant, day, query) => `/v1/daily/${enc(variant)}/${enc(day)}/board?${query}`,
  dailyAround: (variant, day, player, around) =>
    `/v1/daily/${enc(variant)}/${enc(day)}/board/players/${enc(player)}?around=${enc(String(around))}`,
  weekBoard: (variant, week, query) =>
    `/v1/daily/${enc(variant)}/weeks/${enc(week)}/board?${query}`,
  weekAround: (variant, week, player, around) =>
    `/v1/daily/${enc(variant)}/weeks/${enc(week)}/board/players/${enc(player)}?around=${enc(String(around))}`,
  streaks: (variant, query) => `/v1/daily/${enc(variant)}/streaks?${query}`,
  streaksAround: (variant, player, around) =>
    `/v1/daily/${enc(variant)}/streaks/players/${enc(player)}?around=${enc(String(around))}`,
  dailyEvents: (variant, day, after) =>
    `/v1/daily/${enc(variant)}/${enc(day)}/events?after=${enc(String(after))}`,
};

// The query of a page of a day's board: limit, then the cursor of the page before.
export function boardQuery({ limit = 10, cursor } = {}) {
  const query = new URLSearchParams({ limit: String(limit) });
  if (cursor) query.set("cursor", cursor);
  return query.toString();
}

// The query of a page of "My games": limit, then the filters and the cursor when given.
export function myGamesQuery({ limit = 20, variant, status, cursor } = {}) {
  const query = new URLSearchParams({ limit: String(limit) });
  if (variant) query.set("variant", variant);
  if (status) query.set("status", status);
  if (cursor) query.set("cursor", cursor);
  return query.toString();
}

// One HTTP exchange. Resolves {status, data, etag, retryAfter}; rejects with ApiError (an answer
// that is not 2xx/304), NetworkError (no answer at all, or none within REQUEST_TIMEOUT_MS)
// or the AbortError of opts.signal once the caller aborts.
export async function request(method, path, opts = {}) {
  const headers = { Accept: "application/json" };
  let body;
  if (opts.rawBody !== undefined) {
    body = opts.rawBody;
    headers["Content-Type"] = "application/json";
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["Content-Type"] = "application/json";
  }
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  if (opts.ifMatch !== undefined && opts.ifMatch !== null) headers["If-Match"] = `"${opts.ifMatch}"`;
  if (opts.ifNoneMatch !== undefined && opts.ifNoneMatch !== null) {
    headers["If-None-Match"] = `"${opts.ifNoneMatch}"`;
  }
  if (opts.idempotencyKey) headers["Idempotency-Key"] = opts.idempotencyKey;
  // The exchange's own signal: aborted by the caller's, or when its time is up.
  const exchange = new AbortController();
  const caller = opts.signal;
  const abort = () => exchange.abort();
  if (caller) {
    if (caller.aborted) exchange.abort();
    else caller.addEventListener("abort", abort, { once: true });
  }
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    exchange.abort();
  }, REQUEST_TIMEOUT_MS);
  try {
    return await exchangeOnce(method, path, headers, body, exchange.signal);
  } catch (error) {
    if (timedOut && error && error.name === "AbortError" && !(caller && caller.aborted)) {
      throw new NetworkError(error, { timedOut });
    }
    throw error;
  } finally {
    clearTimeout(timer);
    if (caller) caller.removeEventListener("abort", abort);
  }
}

async function exchangeOnce(method, path, headers, body, signal) {
  let response;
  try {
    response = await fetch(path, { method, headers, body, cache: "no-store", signal });
  } catch (error) {
    if (error && error.name === "AbortError") throw error;
    throw new NetworkError(error);
  }
  const etag = response.headers.get("ETag");
  const retry = Number.parseInt(response.headers.get("Retry-After") || "", 10);
  const retryAfter = Number.isFinite(retry) ? retry : undefined;
  if (response.status === 304 || response.status === 204) {
    return { status: response.status, data: null, etag };
  }
  let text = "";
  try {
    text = await response.text();
  } catch (error) {
    if (error && error.name === "AbortError") throw error;
    throw new NetworkError(error);
  }
  let data = null;
  const type = response.headers.get("Content-Type") || "";
  if (text && /json/.test(type)) {
    try {
      data = parseJson(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) throw new ApiError(response.status, data, retryAfter);
  return { status: response.status, data, etag, retryAfter };
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

// Retries while the server cannot be reached or says "later" (503, 429), with backoff
// (or the server's Retry-After). onWait(seconds, error) is told before each pause and
// onWait(0) once it goes through. A write carries the same Idempotency-Key every time,
// so a retry of a write that was in fact applied answers the first response again.
export async function withRetry(fn, { attempts = 8, onWait = () => {} } = {}) {
  let delay = 1;
  for (let attempt = 1; ; attempt += 1) {
    try {
      const result = await fn();
      if (attempt > 1) onWait(0);
      return result;
    } catch (error) {
      const transient = error instanceof NetworkError
        || (error instanceof ApiError && (error.status === 503 || error.status === 429));
      if (!transient || attempt >= attempts) {
        if (attempt > 1) onWait(0);
        throw error;
      }
      const wait = error instanceof ApiError && error.retryAfter ? error.retryAfter : delay;
      onWait(wait, error);
      await sleep(wait * 1000);
      delay = Math.min(delay * 2, 16);
    }
  }
}

export class Api {
  constructor({ onWait } = {}) {
    this.onWait = onWait || (() => {});
  }

  get(path, opts = {}) {
    return withRetry(() => request("GET", path, opts), { onWait: this.onWait });
  }

  write(method, path, opts = {}) {
    const key = newIdempotencyKey();
    return withRetry(() => request(method, path, { ...opts, idempotencyKey: key }),
      { onWait: this.onWait });
  }

  variants() {
    return this.get(paths.variants());
  }

  // The player token, when given, makes the game the player's (listed in "My games").
  createGame({ variant, seed, undo, winnable, playerToken }) {
    // The seed is sent as written (up to 2**64-1 does not fit a JS number).
    let raw = `{"variant":${JSON.stringify(variant)}`;
    if (seed !== null && seed !== undefined && seed !== "") raw += `,"seed":${seed}`;
    if (winnable) raw += `,"winnable":true`;
    if (undo) raw += `,"undo":${JSON.stringify(undo)}`;
    raw += "}";
    return this.write("POST", paths.games(), { rawBody: raw, token: playerToken || undefined });
  }

  // Reads carry the player's token when this device has one: a ranked game of the daily
  // deal is its player's only while its day is open (others: 403 ranked_game_hidden).
  game(id, ifNoneMatch, playerToken) {
    return this.get(paths.game(id), { ifNoneMatch, token: playerToken || undefined });
  }

  moves(id, playerToken) {
    return this.get(paths.moves(id), { token: playerToken || undefined });
  }

  history(id, playerToken) {
    return this.get(paths.history(id), { token: playerToken || undefined });
  }

  move(id, token, move, version) {
    return this.write("POST", paths.moves(id), { body: move, token, ifMatch: version });
  }

  undo(id, token, version) {
    return this.write("POST", paths.undo(id), { body: {}, token, ifMatch: version });
  }

  hint(id) {
    return this.get(paths.hint(id));
  }

  autoplay(id, token, version) {
    return this.write("POST", paths.autoplay(id), { body: {}, token, ifMatch: version });
  }

  // {status: 200, data: Analysis} once it is ready, {status: 202, retryAfter} while the
  // server computes it; 409 game_not_over before the game ends.
  analysis(id) {
    return this.get(paths.analysis(id));
  }

  remove(id, token) {
    return this.write("DELETE", paths.game(id), { token });
  }

  // --- the player's account: its token is sent only as a bearer token, never in a URL ---
  createPlayer(name) {
    return this.write("POST", paths.players(), { body: { name } });
  }

  me(playerToken) {
    return this.get(paths.me(), { token: playerToken });
  }

  // A page of the player's games, newest first: {games, next_cursor}.
  myGames(playerToken, { limit, variant, status, cursor } = {}) {
    return this.get(paths.myGames(myGamesQuery({ limit, variant, status, cursor })),
      { token: playerToken });
  }

  myStats(playerToken) {
    return this.get(paths.myStats(), { token: playerToken });
  }

  // --- the daily deal ---
  // Today: {day, start, end, variants: [{variant, deal_commitment, players, entries}]}.
  daily({ signal } = {}) {
    return this.get(paths.daily(), { signal });
  }

  // One variant's day; with the player's token, my_game names their ranked game.
  dailyDay(variant, day, playerToken) {
    return this.get(paths.dailyDay(variant, day), { token: playerToken || undefined });
  }

  // The player's ranked attempt at the day's deal: {game, player_token}. No
  // Idempotency-Key (the route takes none): a retry of an attempt that was made answers
  // 409 attempt_taken, and the page then resumes the game.
  dailyAttempt(variant, day, playerToken) {
    return withRetry(() => request("POST", paths.dailyDay(variant, day), { token: playerToken }),
      { onWait: this.onWait });
  }

  // A page of the day's board, best first: {count, entries, next_cursor}. An aborted
  // signal ends the read and its retries.
  dailyBoard(variant, day, { limit, cursor, signal } = {}) {
    return this.get(paths.dailyBoard(variant, day, boardQuery({ limit, cursor })), { signal });
  }

  // A player's rank and the entries around it; 404 not_on_board before their entry.
  dailyAround(variant, day, playerId, around = 2, { signal } = {}) {
    return this.get(paths.dailyAround(variant, day, playerId, around), { signal });
  }

  // A page of an ISO week's board (YYYY-Www), most days won first:
  // {count, entries: [{rank, player_id, name, won, moves}], next_cursor}.
  weekBoard(variant, week, { limit, cursor, signal } = {}) {
    return this.get(paths.weekBoard(variant, week, boardQuery({ limit, cursor })), { signal });
  }

  // A player's rank on a week's board and the entries around it; 404 not_on_board.
  weekAround(variant, week, playerId, around = 2, { signal } = {}) {
    return this.get(paths.weekAround(variant, week, playerId, around), { signal });
  }

  // A page of the streaks' board, longest first:
  // {count, entries: [{rank, player_id, name, current, longest, last_day_won}], next_cursor}.
  streaks(variant, { limit, cursor, signal } = {}) {
    return this.get(paths.streaks(variant, boardQuery({ limit, cursor })), { signal });
  }

  // A player's rank on the streaks' board and the entries around it; 404 not_on_board.
  streaksAround(variant, playerId, around = 2, { signal } = {}) {
    return this.get(paths.streaksAround(variant, playerId, around), { signal });
  }

  // The board's feed after an event id ("0": from the first): {events, last_event_id}.
  dailyEvents(variant, day, after) {
    return request("GET", paths.dailyEvents(variant, day, after));
  }

  eventsSince(id, after) {
    return request("GET", paths.events(id, after));
  }
}
