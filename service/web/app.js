// Patience: the reference web client. It plays through the public /v1 API only.

import { Api, ApiError, NetworkError } from "./api.js";
import { cardText, prettyLabel } from "./cards.js";
import { BoardFollower, Follower, Refresher } from "./live.js";
import { TableView } from "./table.js";

const $ = (id) => document.getElementById(id);
const MAX_SEED = 18446744073709551615n;
const ACTIONS = { deal: "Deal", draw: "Draw", refill: "Refill" };
const OVER = new Set(["won", "lost", "resigned"]);

// --- what this device remembers: the player's token of each game it dealt -------------
const memory = new Map();
const saved = {
  get(key) {
    try {
      return window.localStorage.getItem(key);
    } catch {
      return memory.has(key) ? memory.get(key) : null;
    }
  },
  set(key, value) {
    try {
      window.localStorage.setItem(key, value);
    } catch {
      memory.set(key, value);
    }
  },
  remove(key) {
    try {
      window.localStorage.removeItem(key);
    } catch {
      memory.delete(key);
    }
  },
  token: (id) => saved.get(`patience.token.${id}`),
  recent() {
    try {
      const list = JSON.parse(saved.get("patience.games") || "[]");
      return Array.isArray(list) ? list : [];
    } catch {
      return [];
    }
  },
  remember(game, token) {
    saved.set(`patience.token.${game.id}`, token);
    const list = saved.recent().filter((g) => g.id !== game.id);
    list.unshift({ id: game.id, variant: game.variant, at: game.created_at });
    for (const old of list.splice(50)) saved.remove(`patience.token.${old.id}`);
    saved.set("patience.games", JSON.stringify(list));
  },
  forget(id) {
    saved.remove(`patience.token.${id}`);
    saved.set("patience.games", JSON.stringify(saved.recent().filter((g) => g.id !== id)));
  },
  // The player's account: its token is a secret, kept here and sent only as a bearer
  // token (never in a URL, never logged); its name only to show it.
  playerToken: () => saved.get("patience.player.token"),
  playerName: () => saved.get("patience.player.name"),
  keepPlayer(token, name) {
    saved.set("patience.player.token", token);
    saved.set("patience.player.name", name || "");
  },
  forgetPlayer() {
    saved.remove("patience.player.token");
    saved.remove("patience.player.name");
  },
};

// --- state -----------------------------------------------------------------------------
const S = {
  variants: [],
  byId: new Map(),
  game: null,
  variant: null,
  token: null,
  moves: [],
  movesVersion: null,
  selected: null,
  hint: null,
  arrived: new Set(),
  busy: false,
  follower: null,
  conn: { state: "", text: "" },
  waitText: "",
  missing: new Map(), // optional endpoint -> note, once it answered 404
  refreshing: null,
  refreshAgain: false,
  seq: 0,
  // After the end: {gameId, state: "pending" | "ready" | "failed", data, error}.
  analysis: null,
  // The replay of the winning line: {gameId, line, index, states, events, busy, id, token}.
  replay: null,
  // Games known to be the player's (listed in "My games" or dealt here): the player token
  // plays them on a device that does not hold their own token.
  mine: new Set(),
  // The account being made (one at a time), and "My games" as listed: {games, cursor}.
  making: null,
  list: null,
  listSeq: 0,
  // The player's id (their board entries), once the server told it.
  playerId: null,
  // The daily view: today's id, the variant whose board is shown, its cursor, how many
  // pages "More of the board" added, the board's follower and refresher (with the
  // controller that aborts their re-reads when the board is left), the re-read under
  // way ({seq, again, quiet, done}: done, a promise of whether it went through; again,
  // another asked for after it). boardDay: the day whose board is shown (today's, or
  // the day before, whose deal and games anyone may see). tab: the board shown ("day",
  // "week" or "streaks"); ranks: per board of another tab, the title of the board shown
  // (its variant, its week), its cursor and the number of its last first read (an
  // answer of an older read is dropped).
  daily: { day: null, start: null, end: null, variant: null, cursor: null, shown: 0,
           pages: 0, follower: null, refresher: null, aborter: null, reading: null,
           boardDay: null, tab: "day",
           ranks: { week: { shown: null, seq: 0, cursor: null },
                    streaks: { shown: null, seq: 0, cursor: null } } },
};

const api = new Api({
  onWait(seconds, error) {
    S.waitText = seconds
      ? `${waitReason(error)}: retrying in ${seconds} s\u2026`
      : "";
    showConn();
  },
});
function waitReason(error) {
  if (!(error instanceof NetworkError)) return "The server is busy";
  return error.timedOut ? "No answer from the server" : "Connection lost";
}
// The reads made in the background (the daily board's refresh): retried alike, quietly.
const quietApi = new Api();

let table;
let preview;

// --- connection status -------------------------------------------------------------------
const CONN_LABELS = {
  live: "Live",
  polling: "Following",
  reconnecting: "Reconnecting\u2026",
  connecting: "Connecting\u2026",
  offline: "Offline",
  gone: "Deleted",
  ended: "",
};

// The top bar shows a short state; its title and the game's notes say the whole story.
function showConn() {
  const node = $("conn");
  const state = S.waitText ? "reconnecting" : S.conn.state;
  const text = S.waitText || S.conn.text;
  const short = S.waitText ? S.waitText.replace(/^.*: r/, "R") : CONN_LABELS[state];
  node.textContent = short || "";
  node.title = text;
  node.dataset.state = state;
  node.hidden = !node.textContent;
  const live = $("live-note");
  live.textContent = ["polling", "reconnecting", "offline", "gone"].includes(state) ? text : "";
  live.dataset.state = state;
  live.hidden = !live.textContent || $("game").hidden;
}

function setConn(state, text) {
  S.conn = { state, text };
  showConn();
  document.body.dataset.live = state;
}

// --- messages ----------------------------------------------------------------------------
function say(text, kind = "info") {
  const node = $("message");
  node.textContent = text;
  node.className = `message ${kind}`;
  node.hidden = !text;
}

function sayError(error, context) {
  if (error instanceof ApiError) {
    const node = $("message");
    say(error.detail, "error");
    node.dataset.code = error.code;
    node.dataset.status = String(error.status);
    return;
  }
  if (error instanceof NetworkError) {
    const what = error.timedOut ? "got no answer from the server in time"
      : "did not reach the server: it cannot be reached";
    say(`${context || "That"} ${what}. The table will catch up when the connection is back.`, "error");
    return;
  }
  say(String(error && error.message ? error.message : error), "error");
}

function noteMissing(feature, error) {
  const notes = {
    hint: "Hints are not available on this server yet",
    autoplay: "Autoplay is not available on this server yet",
  };
  S.missing.set(feature, `${notes[feature]} (it answered ${error.status}).`);
  say(S.missing.get(feature), "note");
  renderGame();
}

// --- routing: #game=<id> ---------------------------------------------------------------
function gameIdFromHash() {
  const params = new URLSearchParams(window.location.hash.replace(/^#/, ""));
  const id = params.get("game");
  return id && /^[A-Za-z0-9_-]{1,128}$/.test(id) ? id : null;
}

const VIEWS = ["lobby", "game", "daily", "mygames", "stats", "account"];

function showSection(name) {
  if (name !== "daily") stopBoard();
  for (const view of VIEWS) $(view).hidden = view !== name;
  const current = {
    daily: "nav-daily", mygames: "nav-games", stats: "nav-stats", account: "nav-account",
  }[name];
  for (const id of ["nav-daily", "nav-games", "nav-stats", "nav-account"]) {
    if (id === current) $(id).setAttribute("aria-current", "page");
    else $(id).removeAttribute("aria-current");
  }
}

function route() {
  const id = gameIdFromHash();
  const hash = window.location.hash.replace(/^#/, "");
  if (id) openGame(id);
  else if (hash === "daily" || hash.startsWith("daily=")) showDaily(dailyVariantFromHash());
  else if (hash === "games") showMyGames();
  else if (hash === "stats") showStats();
  else if (hash === "account") showAccount();
  else showLobby();
}

// --- lobby ---------------------------------------------------------------------------------
function chosenVariant() {
  const checked = document.querySelector('input[name="variant"]:checked');
  return checked ? S.byId.get(checked.value) : S.variants[0];
}

function buildLobby() {
  const list = $("variant-list");
  list.replaceChildren();
  const last = saved.get("patience.variant");
  S.variants.forEach((variant, i) => {
    const label = document.createElement("label");
    label.className = "variant-choice";
    const input = document.createElement("input");
    input.type = "radio";
    input.name = "variant";
    input.value = variant.id;
    input.checked = last ? last === variant.id : i === 0;
    input.addEventListener("change", renderPreview);
    const name = document.createElement("strong");
    name.textContent = variant.name;
    const summary = document.createElement("span");
    summary.className = "summary";
    summary.textContent = variant.summary;
    label.append(input, name, summary);
    list.append(label);
  });
  if (!document.querySelector('input[name="variant"]:checked') && list.querySelector("input")) {
    list.querySelector("input").checked = true;
  }
}

function renderPreview() {
  const variant = chosenVariant();
  if (!variant) return;
  preview.render(variant, null, { interactive: false, maxHeight: Math.min(520, window.innerHeight * 0.6) });
}

function renderRecent() {
  const games = saved.recent();
  $("recent").hidden = games.length === 0;
  const list = $("recent-list");
  list.replaceChildren();
  for (const g of games.slice(0, 8)) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = `#game=${g.id}`;
    const variant = S.byId.get(g.variant);
    const when = g.at ? new Date(g.at).toLocaleString() : "";
    link.textContent = `${variant ? variant.name : g.variant}${when ? `, dealt ${when}` : ""}`;
    item.append(link);
    list.append(item);
  }
}

function showLobby(errorText) {
  stopFollowing();
  closeReplay({ redraw: false });
  S.game = null;
  S.analysis = null;
  S.seq += 1;
  document.title = "Patience";
  showSection("lobby");
  $("new-game-top").hidden = true;
  $("name-field").hidden = Boolean(saved.playerToken());
  if (!$("new-name").value) $("new-name").value = guestName();
  setConn("", "");
  const err = $("lobby-error");
  err.textContent = errorText || "";
  err.hidden = !errorText;
  renderRecent();
  renderPreview();
}

async function startGame(event) {
  event.preventDefault();
  const variant = chosenVariant();
  const seedText = $("seed").value.trim();
  const err = $("lobby-error");
  err.hidden = true;
  if (seedText && (!/^\d{1,20}$/.test(seedText) || BigInt(seedText) > MAX_SEED)) {
    err.textContent = "A deal number is a whole number from 0 to 18446744073709551615, or blank for a random deal.";
    err.hidden = false;
    $("seed").focus();
    return;
  }
  const winnable = $("winnable").checked;
  if (winnable && seedText) {
    err.textContent = "A winnable deal is chosen by the server: leave the deal number blank.";
    err.hidden = false;
    $("seed").focus();
    return;
  }
  saved.set("patience.variant", variant.id);
  const button = $("start");
  button.disabled = true;
  try {
    const playerToken = await ensurePlayer($("new-name").value);
    const { data } = await api.createGame({
      variant: variant.id,
      seed: seedText ? BigInt(seedText).toString() : null,
      undo: $("undo").value,
      winnable,
      playerToken,
    });
    saved.remember(data.game, data.player_token);
    S.mine.add(data.game.id);
    S.preloaded = data.game;
    window.location.hash = `game=${data.game.id}`;
  } catch (error) {
    if (refused(error)) {
      // The account's token was revoked or the account erased: the next game makes another.
      err.textContent = "This device's account is no longer valid on this server: deal again to play as a new guest.";
      $("name-field").hidden = false;
    } else {
      err.textContent = error instanceof ApiError ? error.detail : "The server cannot be reached: try again in a moment.";
    }
    err.hidden = false;
  } finally {
    button.disabled = false;
  }
}

// --- a game ----------------------------------------------------------------------------------
function stopFollowing() {
  if (S.follower) S.follower.stop();
  S.follower = null;
}

async function openGame(id) {
  stopFollowing();
  closeReplay({ redraw: false });
  const seq = (S.seq += 1);
  Object.assign(S, {
    game: null, variant: null, moves: [], movesVersion: null, selected: null, hint: null,
    busy: false, token: saved.token(id) || (S.mine.has(id) ? saved.playerToken() : null),
    analysis: null,
  });
  showSection("game");
  $("new-game-top").hidden = false;
  say("");
  $("banner").hidden = true;
  delete $("banner").dataset.status;
  $("game-title").textContent = "Loading the game\u2026";
  $("table").replaceChildren();
  let game = S.preloaded && S.preloaded.id === id ? S.preloaded : null;
  S.preloaded = null;
  try {
    if (!game) game = (await api.game(id, undefined, saved.playerToken())).data;
  } catch (error) {
    if (seq !== S.seq) return;
    if (error instanceof ApiError && error.status === 404) {
      showLobby("That game does not exist (any more): it may have been deleted or expired.");
    } else {
      showLobby(`The game could not be loaded: ${error.message}`);
    }
    return;
  }
  if (seq !== S.seq) return;
  S.variant = S.byId.get(game.variant);
  if (!S.variant) {
    showLobby(`This client does not know the variant ${game.variant}.`);
    return;
  }
  S.game = game;
  document.title = `${S.variant.name} \u2013 Patience`;
  renderGame();
  if (!S.token) checkMine(seq, game);
  await loadMoves(seq);
  if (seq !== S.seq) return;
  follow(seq);
}

// A ranked game of the daily deal while its day is open: its player's only (no one else
// may read it, so no one follows it), with no hint and no analysis until the day is over.
function rankedOpen(game) {
  return Boolean(game && game.ranked && Date.now() < Date.parse(game.ranked.deadline));
}

function follow(seq) {
  if (!S.game || OVER.has(S.game.status) || seq !== S.seq) return;
  // The events feed of a ranked game answers its player only, by a header that an
  // EventSource cannot send: the player's own writes keep the table up to date.
  if (rankedOpen(S.game)) return;
  stopFollowing();
  S.follower = new Follower({
    api,
    gameId: S.game.id,
    getVersion: () => (S.game ? S.game.version : 0),
    onEntry: (entry) => {
      if (seq !== S.seq || !S.game) return;
      if (entry && entry.game && entry.game.id === S.game.id) {
        if (applyGame(entry.game, null)) loadMoves(seq);
        return;
      }
      if (entry && typeof entry.version === "number" && entry.version <= S.game.version) return;
      refresh(seq);
    },
    onStatus: (state, text) => {
      if (seq === S.seq) setConn(state, text);
    },
    onGone: () => {
      if (seq !== S.seq) return;
      say("This game has been deleted.", "error");
      S.token = null;
      renderGame();
    },
  });
  setConn("connecting", "Connecting\u2026");
  S.follower.start();
}

// Re-read the game (and its moves) when something may have changed.
function refresh(seq = S.seq) {
  if (S.refreshing) {
    S.refreshAgain = true;
    return S.refreshing;
  }
  S.refreshing = (async () => {
    try {
      do {
        S.refreshAgain = false;
        if (!S.game || seq !== S.seq) return;
        const { status, data } = await api.game(S.game.id, S.game.version, saved.playerToken());
        if (seq !== S.seq) return;
        if (status === 200 && data && applyGame(data, null)) await loadMoves(seq);
      } while (S.refreshAgain);
    } catch (error) {
      if (error instanceof ApiError && error.code === "game_not_found") {
        say("This game has been deleted.", "error");
        stopFollowing();
      }
    } finally {
      S.refreshing = null;
    }
  })();
  return S.refreshing;
}

async function loadMoves(seq = S.seq) {
  if (!S.game) return;
  try {
    const { data } = await api.moves(S.game.id, saved.playerToken());
    if (seq !== S.seq || !S.game) return;
    if (data.version > S.game.version) {
      refresh(seq);
      return;
    }
    if (data.version === S.game.version) {
      S.moves = data.moves;
      S.movesVersion = data.version;
      renderGame();
    }
  } catch {
    // The next change or reconnection reads them again.
  }
}

// Take a newer game; false when it is not newer than the one shown.
function applyGame(game, events) {
  if (!S.game || game.id !== S.game.id || game.version < S.game.version) return false;
  if (game.version === S.game.version && game.status === S.game.status) return false;
  S.game = game;
  S.hint = null;
  S.moves = [];
  S.movesVersion = null;
  if (S.selected) {
    const pile = game.piles.find((p) => p.id === S.selected);
    if (!pile || pile.count === 0) S.selected = null;
  }
  S.arrived = new Set((events || []).map((e) => e.to));
  if (OVER.has(game.status)) {
    stopFollowing();
    setConn("over", "");
    S.selected = null;
  }
  renderGame();
  return true;
}

function isPlayer() {
  return Boolean(S.token);
}

function playing() {
  return S.game && S.game.status === "playing";
}

function legal(type) {
  return S.moves.some((m) => m.type === type);
}

function targetsOf(pileId) {
  return new Set(S.moves.filter((m) => m.type === "move" && m.from === pileId).map((m) => m.to));
}

function pileOf(id) {
  return S.game ? S.game.piles.find((p) => p.id === id) : null;
}

function labelOf(id) {
  const spec = S.variant && S.variant.piles.find((p) => p.id === id);
  return spec && spec.label ? `${prettyLabel(spec.label)} (${id})` : id;
}

// --- playing ----------------------------------------------------------------------------
function onPile(pileId) {
  if (!S.game) return;
  if (!isPlayer()) {
    say("You are watching: only the player who dealt this game can move.", "note");
    return;
  }
  if (!playing() || S.busy) return;
  const pile = pileOf(pileId);
  if (!pile) return;
  if (pile.kind === "stock") {
    S.selected = null;
    const action = Object.keys(ACTIONS).find((a) => legal(a))
      || Object.keys(ACTIONS).find((a) => S.variant.moves.includes(a));
    if (action) send({ type: action });
    return;
  }
  if (S.selected === pileId) {
    S.selected = null;
    say("");
    renderGame();
    return;
  }
  if (S.selected) {
    const from = S.selected;
    S.selected = null;
    send({ type: "move", from, to: pileId });
    return;
  }
  if (pile.count === 0) return;
  S.selected = pileId;
  const card = pile.cards[pile.cards.length - 1];
  const targets = targetsOf(pileId);
  if (targets.size === 0) {
    say(`${cardText(card)} has no legal move now; pick a destination all the same and the server will say why.`, "note");
  } else {
    say(`${cardText(card)} selected: choose where it goes (${[...targets].map(labelOf).join(", ")}); Esc cancels.`, "info");
  }
  renderGame();
}

function onDrop(from, to) {
  if (!to) {
    S.selected = null;
    renderGame();
    return;
  }
  S.selected = null;
  send({ type: "move", from, to });
}

// One write at a time: ``call(game)`` sends it, ``done(data)`` says what happened; the
// answer's game is shown and the legal moves re-read. ``route`` names an endpoint that a
// server may not have deployed (then a note, not an error).
async function write({ call, done, context, route }) {
  if (S.busy || !S.game) return;
  const seq = S.seq;
  S.busy = true;
  S.hint = null;
  S.selected = null;
  renderGame();
  try {
    const { data } = await call(S.game);
    if (seq !== S.seq) return;
    done(data);
    if (applyGame(data.game, data.events)) loadMoves(seq);
  } catch (error) {
    if (seq !== S.seq) return;
    if (route && error instanceof ApiError && error.routeMissing) noteMissing(route, error);
    else failed(error, context);
  } finally {
    if (seq === S.seq) {
      S.busy = false;
      renderGame();
    }
  }
}

function send(move) {
  return write({
    call: (game) => api.move(game.id, S.token, move, game.version),
    done: () => say(""),
    context: move.type === "move" ? "The move" : `The ${move.type}`,
  });
}

function failed(error, context) {
  if (error instanceof ApiError && error.status === 412) {
    say("The game changed in another window: the table now shows where it stands. Try again.", "note");
    refresh();
    return;
  }
  if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
    sayError(error);
    S.token = null;
    renderGame();
    return;
  }
  sayError(error, context);
  if (error instanceof NetworkError) refresh();
}

function undo() {
  return write({
    call: (game) => api.undo(game.id, S.token, game.version),
    done: () => say("Move taken back.", "info"),
    context: "The undo",
  });
}

function describeMove(move) {
  if (move.type !== "move") return ACTIONS[move.type] ? ACTIONS[move.type].toLowerCase() : move.type;
  const card = move.card ? `${cardText(move.card)} ` : "";
  return `${card}from ${labelOf(move.from)} to ${labelOf(move.to)}`;
}

// "goes home" -> "Goes home."
function sentence(text) {
  const t = String(text).trim();
  return t ? `${t[0].toUpperCase()}${t.slice(1)}${/[.!?]$/.test(t) ? "" : "."}` : "";
}

async function hint() {
  if (!S.game) return;
  const seq = S.seq;
  try {
    const { data } = await api.hint(S.game.id);
    if (seq !== S.seq || !S.game) return;
    if (!data || !data.move) {
      S.hint = null;
      say(`No hint: ${data && data.reason ? data.reason : "no move helps now"}.`, "note");
    } else {
      S.hint = data.move;
      S.selected = null;
      say(`Hint: ${describeMove(data.move)}.${data.reason ? ` ${sentence(data.reason)}` : ""}`, "hint");
    }
    renderGame();
  } catch (error) {
    if (seq !== S.seq) return;
    if (error instanceof ApiError && error.routeMissing) noteMissing("hint", error);
    else sayError(error, "The hint request");
  }
}

function autoplay() {
  return write({
    call: (game) => api.autoplay(game.id, S.token, game.version),
    done: (data) => {
      const moved = data.events ? data.events.length : 0;
      say(moved ? `Autoplay moved ${moved} card${moved === 1 ? "" : "s"}.`
        : "Autoplay found nothing that is always safe to play.", "info");
    },
    context: "Autoplay",
    route: "autoplay",
  });
}

async function removeGame() {
  if (!S.game || !S.token) return;
  const { id } = S.game;
  try {
    await api.remove(id, S.token);
    saved.forget(id);
    window.location.hash = "";
  } catch (error) {
    sayError(error, "The deletion");
  }
}

function cancel() {
  let changed = false;
  if (S.selected || S.hint) {
    S.selected = null;
    S.hint = null;
    changed = true;
  }
  $("resign-confirm").hidden = true;
  $("delete-confirm").hidden = true;
  if (changed) {
    say("");
    renderGame();
  }
}

// --- drawing the game ----------------------------------------------------------------------
function statusText(game) {
  const moves = game.moves_made ?? null;
  const parts = [];
  parts.push({ playing: "Playing", won: "Won", lost: "Lost", resigned: "Resigned" }[game.status] || game.status);
  if (moves !== null) parts.push(`${moves} move${moves === 1 ? "" : "s"}`);
  const stock = game.piles.find((p) => p.kind === "stock");
  if (stock) parts.push(`${stock.count} in the stock`);
  if (game.winnable) parts.push("a winnable deal");
  if (game.ranked) parts.push(`daily deal of ${game.ranked.day}`);
  parts.push(isPlayer() ? "your game" : "watching");
  return parts.join(" \u00b7 ");
}

function renderBanner(game) {
  const banner = $("banner");
  if (!OVER.has(game.status)) {
    banner.hidden = true;
    banner.replaceChildren();
    delete banner.dataset.status;
    return;
  }
  if (banner.dataset.status === `${game.status}:${game.version}`) return;
  banner.dataset.status = `${game.status}:${game.version}`;
  banner.className = `banner ${game.status}`;
  const title = document.createElement("strong");
  const mine = isPlayer();
  title.textContent = {
    won: mine ? "You won!" : "Won!",
    lost: "No move left: the game is lost.",
    resigned: mine ? "You resigned." : "The player resigned.",
  }[game.status];
  const text = document.createElement("span");
  const moves = game.moves_made ?? "";
  text.textContent = {
    won: `All 104 cards are home${moves !== "" ? ` after ${moves} moves` : ""}.`,
    lost: "Better luck with the next deal.",
    resigned: "The deal is revealed below.",
  }[game.status];
  const reveal = document.createElement("span");
  reveal.className = "reveal";
  reveal.textContent = game.seed !== null && game.seed !== undefined
    ? `Deal ${game.seed}${game.salt ? `, salt ${game.salt}` : ""}.` : "";
  const verify = document.createElement("span");
  verify.className = "verify";
  verifyCommitment(game).then((result) => {
    verify.textContent = result;
  });
  const again = document.createElement("button");
  again.type = "button";
  again.className = "btn primary";
  again.textContent = "New game";
  again.addEventListener("click", () => { window.location.hash = ""; });
  const parts = [title, text, reveal, verify];
  if (game.ranked) {
    const result = game.ranked.result;
    if (result) {
      const ranked = document.createElement("span");
      ranked.className = "ranked-result";
      ranked.textContent = `Daily deal of ${game.ranked.day}: ${result.outcome}, `
        + `${plural(result.moves, "move")}, ${plural(result.cards_home, "card")} home, `
        + `in ${duration(result.time_ms)}.`;
      parts.push(ranked);
    }
    if (rankedOpen(game)) reveal.textContent = "The deal is shown once the day is over.";
    const board = document.createElement("a");
    board.className = "btn";
    board.id = "see-board";
    board.href = `#daily=${game.variant}`;
    board.textContent = "See the day\u2019s board";
    parts.push(board);
  }
  banner.replaceChildren(...parts, again);
  banner.hidden = false;
}

async function verifyCommitment(game) {
  if (game.seed === null || game.seed === undefined || !game.salt || !game.deal_commitment) return "";
  if (!window.crypto || !crypto.subtle) return "";
  try {
    const bytes = new TextEncoder().encode(`${game.variant}:${game.seed}:${game.salt}`);
    const digest = await crypto.subtle.digest("SHA-256", bytes);
    const hex = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
    return hex === game.deal_commitment
      ? "\u2713 The deal matches the commitment shown from the start."
      : "\u2717 The deal does NOT match the commitment shown at the start!";
  } catch {
    return "";
  }
}

function renderActions() {
  const holder = $("action-buttons");
  const wanted = S.variant.moves.filter((m) => ACTIONS[m]);
  if (holder.dataset.variant !== S.variant.id) {
    holder.replaceChildren();
    for (const type of wanted) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "btn action";
      b.id = `${type}-btn`;
      b.dataset.action = type;
      b.textContent = ACTIONS[type];
      b.addEventListener("click", () => {
        if (!S.busy) send({ type });
      });
      holder.append(b);
    }
    holder.dataset.variant = S.variant.id;
  }
  const interactive = isPlayer() && playing();
  for (const b of holder.querySelectorAll("button")) {
    const type = b.dataset.action;
    b.disabled = !interactive || !legal(type);
    b.classList.toggle("hinted", Boolean(S.hint && S.hint.type === type));
    b.title = legal(type) ? "" : `No ${type} is possible now`;
  }
}

function renderGame() {
  const { game, variant } = S;
  if (!game || !variant) return;
  const player = isPlayer();
  const live = playing();
  $("game-title").textContent = variant.name;
  $("game-status").textContent = statusText(game);
  renderActions();
  const undoBtn = $("undo-btn");
  undoBtn.disabled = !player || !live || game.undo === "off" || game.moves_made === 0;
  undoBtn.title = game.undo === "off" ? "Undo is off for this game" : "";
  const hintBtn = $("hint-btn");
  const ranked = rankedOpen(game);
  hintBtn.disabled = !live || S.missing.has("hint") || ranked;
  hintBtn.title = ranked ? "No hint for a ranked game while its day is open" : S.missing.get("hint") || "";
  const autoBtn = $("autoplay-btn");
  autoBtn.disabled = !player || !live || S.missing.has("autoplay");
  autoBtn.title = S.missing.get("autoplay") || "Play every card that can never hurt";
  $("resign-btn").disabled = !player || !live;
  if (!live) $("resign-confirm").hidden = true;
  $("readonly").hidden = player;
  renderBanner(game);
  if (OVER.has(game.status) && rankedOpen(game)) {
    S.analysis = { gameId: game.id, state: "later", data: null, error: null };
  } else if (OVER.has(game.status) && (!S.analysis || S.analysis.gameId !== game.id
             || S.analysis.state === "later")) {
    loadAnalysis(S.seq);
  }
  renderAnalysis();

  const wrap = $("table");
  wrap.dataset.game = game.id;
  wrap.dataset.version = String(game.version);
  wrap.dataset.movesVersion = S.movesVersion === null ? "" : String(S.movesVersion);
  wrap.dataset.status = game.status;
  wrap.dataset.busy = S.busy ? "1" : "0";
  wrap.classList.toggle("busy", S.busy);
  const top = wrap.getBoundingClientRect().top + window.scrollY;
  const hintMove = S.hint && S.hint.type === "move" ? S.hint : null;
  const hintStock = S.hint && S.hint.type !== "move" ? { from: "stock" } : null;
  const replayed = replayShown();
  wrap.dataset.replay = replayed ? String(S.replay.index) : "";
  if (replayed) {
    const events = S.replay.events[S.replay.index] || [];
    table.render(variant, replayed, {
      interactive: false,
      selected: null,
      targets: new Set(),
      hint: {},
      nextDeal: replayed.status === "playing" ? replayed.next_deal : null,
      arrived: new Set(events.map((e) => e.to)),
      maxHeight: Math.max(360, window.innerHeight - Math.min(top, 230) - 12),
    });
  } else table.render(variant, game, {
    interactive: player && live,
    selected: S.selected,
    targets: S.selected ? targetsOf(S.selected) : new Set(),
    hint: hintMove || hintStock || {},
    nextDeal: live ? game.next_deal : null,
    arrived: S.arrived,
    maxHeight: Math.max(360, window.innerHeight - Math.min(top, 230) - 12),
  });
  S.arrived = new Set();

  $("game-id").textContent = game.id;
  const link = `${window.location.origin}${window.location.pathname}#game=${game.id}`;
  $("share-link").value = link;
  $("commitment").textContent = game.deal_commitment || "";
  const hasSeed = game.seed !== null && game.seed !== undefined;
  $("seed-shown").textContent = hasSeed ? String(game.seed) : "hidden until the game ends (a random deal)";
  $("salt-shown").textContent = game.salt ? game.salt : "hidden until the game ends";
  $("undo-shown").textContent = `${game.undo || "?"}${game.undos ? ` (${game.undos} used)` : ""}`;
  $("notes").textContent = [...S.missing.values()].join(" ");
  $("delete-zone").hidden = !player || Boolean(game.ranked);
}

// --- after the end: was the deal winnable, and the solver's winning line ------------------
async function loadAnalysis(seq) {
  if (!S.game) return;
  const gameId = S.game.id;
  S.analysis = { gameId, state: "pending", data: null, error: null };
  for (;;) {
    let answer;
    try {
      answer = await api.analysis(gameId);
    } catch (error) {
      if (seq !== S.seq) return;
      S.analysis = { gameId, state: "failed", data: null, error };
      renderAnalysis();
      return;
    }
    if (seq !== S.seq) return;
    if (answer.status === 200 && answer.data) {
      S.analysis = { gameId, state: "ready", data: answer.data, error: null };
      renderAnalysis();
      return;
    }
    // 202: the server is still searching; ask again when it says.
    renderAnalysis();
    await new Promise((resolve) => { setTimeout(resolve, 1000 * (answer.retryAfter || 1)); });
    if (seq !== S.seq) return;
  }
}

function plural(n, word) {
  return `${n.toLocaleString("en")} ${word}${n === 1 ? "" : "s"}`;
}

function verdictOf(analysis) {
  if (!analysis) return { kind: "", text: "" };
  if (analysis.state === "later") {
    return { kind: "later", text: "Could this deal be won? The analysis of the daily deal is given once its day is over." };
  }
  if (analysis.state === "pending") {
    return { kind: "pending", text: "Could this deal be won? The server\u2019s solver is looking\u2026" };
  }
  if (analysis.state === "failed") {
    const error = analysis.error;
    if (error instanceof ApiError && error.routeMissing) {
      return { kind: "missing", text: "This server does not analyse deals." };
    }
    return { kind: "failed", text: `The analysis of this deal could not be read (${error && error.message ? error.message : error}).` };
  }
  const a = analysis.data;
  const effort = `${plural(a.searched, "position")} searched in ${Number(a.seconds).toFixed(1)} s`;
  if (a.winnable === true) {
    return { kind: "winnable", text: `This deal was winnable: the solver found a winning line of ${plural(a.line.length, "move")} (${effort}).` };
  }
  if (a.winnable === false) {
    return { kind: "lost", text: `This deal was proved lost: no line of play wins it (${effort}).` };
  }
  return { kind: "undecided", text: `This deal is undecided: the solver could not settle it within its budget (${effort}).` };
}

function renderAnalysis() {
  const box = $("analysis");
  const over = S.game && OVER.has(S.game.status);
  const analysis = over && S.analysis && S.analysis.gameId === S.game.id ? S.analysis : null;
  box.hidden = !analysis;
  if (!analysis) return;
  const { kind, text } = verdictOf(analysis);
  box.dataset.verdict = kind;
  $("verdict").textContent = text;
  const line = kind === "winnable" ? analysis.data.line : null;
  const replay = S.replay && S.replay.gameId === S.game.id ? S.replay : null;
  $("replay-btn").hidden = !line || Boolean(replay);
  $("replay-bar").hidden = !replay;
  if (!replay) return;
  $("replay-prev").disabled = replay.busy || replay.index === 0;
  $("replay-next").disabled = replay.busy || replay.index >= replay.line.length
    || replay.states.length === 0;
  let step;
  if (replay.states.length === 0) step = "Dealing the cards again\u2026";
  else if (replay.index === 0) step = `The deal, before the first of ${plural(replay.line.length, "move")}.`;
  else {
    step = `Move ${replay.index} of ${replay.line.length}: ${describeMove(replay.line[replay.index - 1])}.`;
  }
  if (replay.index === replay.line.length && replay.states.length > replay.index) step += " All 104 cards are home.";
  $("replay-step").textContent = step;
}

function replayShown() {
  const r = S.replay;
  if (!r || !S.game || r.gameId !== S.game.id) return null;
  return r.states[r.index] || null;
}

// The replay deals the same variant and seed again as a game of its own (the same seed
// always deals the same cards) and plays the line on it one move at a time, forwards;
// going back shows the positions already seen. That game is deleted when the replay ends.
async function startReplay() {
  const analysis = S.analysis;
  if (!S.game || !analysis || analysis.state !== "ready" || !analysis.data.line) return;
  const seq = S.seq;
  const replay = {
    gameId: S.game.id, line: analysis.data.line, index: 0, states: [], events: [[]],
    busy: true, id: null, token: null,
  };
  S.replay = replay;
  S.selected = null;
  S.hint = null;
  renderGame();
  try {
    const { data } = await api.createGame({ variant: S.game.variant, seed: S.game.seed, undo: "off" });
    replay.id = data.game.id;
    replay.token = data.player_token;
    if (seq !== S.seq || S.replay !== replay) {
      api.remove(replay.id, replay.token).catch(() => {});
      return;
    }
    replay.states.push(data.game);
  } catch (error) {
    if (S.replay === replay) S.replay = null;
    if (seq === S.seq) sayError(error, "The replay");
  } finally {
    replay.busy = false;
    if (seq === S.seq) renderGame();
  }
}

async function replayStep(delta) {
  const replay = S.replay;
  if (!replay || replay.busy || !replay.states.length) return;
  const target = replay.index + delta;
  if (target < 0 || target > replay.line.length) return;
  if (target < replay.states.length) {
    replay.index = target;
    renderGame();
    return;
  }
  const seq = S.seq;
  const move = replay.line[replay.index];
  const body = move.type === "move" ? { type: "move", from: move.from, to: move.to } : { type: move.type };
  replay.busy = true;
  renderAnalysis();
  try {
    const { data } = await api.move(replay.id, replay.token, body, replay.states[replay.index].version);
    if (S.replay !== replay) return;
    replay.states.push(data.game);
    replay.events.push(data.events || []);
    replay.index = target;
  } catch (error) {
    if (seq === S.seq && S.replay === replay) sayError(error, "The replay");
  } finally {
    replay.busy = false;
    if (seq === S.seq) renderGame();
  }
}

function closeReplay({ redraw = true } = {}) {
  const replay = S.replay;
  if (!replay) return;
  S.replay = null;
  if (replay.id && replay.token) api.remove(replay.id, replay.token).catch(() => {});
  if (redraw) renderGame();
}

// --- the player's account -------------------------------------------------------------------
function guestName() {
  const bytes = new Uint16Array(1);
  crypto.getRandomValues(bytes);
  return `Guest ${String(1000 + (bytes[0] % 9000))}`;
}

function cleanName(text) {
  const name = String(text || "").trim();
  return name || guestName();
}

function showPlayer() {
  const name = saved.playerToken() ? saved.playerName() : "";
  $("player-name").textContent = name ? `: ${name}` : "";
  $("nav-account").title = name ? `Your account (${name})` : "Your account";
}

// The player's token, the account made first if this device has none (once, even when
// asked twice at the same time).
async function ensurePlayer(name) {
  const token = saved.playerToken();
  if (token) return token;
  if (!S.making) {
    S.making = (async () => {
      try {
        const { data } = await api.createPlayer(cleanName(name));
        saved.keepPlayer(data.player_token, data.player.name);
        S.playerId = data.player.id;
        showPlayer();
        return data.player_token;
      } finally {
        S.making = null;
      }
    })();
  }
  return S.making;
}

// An account whose token the server refuses (revoked, or the account erased) is
// forgotten here: the next game makes a new one.
function refused(error) {
  if (error instanceof ApiError && error.status === 401) {
    saved.forgetPlayer();
    S.playerId = null;
    showPlayer();
    return true;
  }
  return false;
}

async function checkAccount() {
  const token = saved.playerToken();
  if (!token) return;
  try {
    const { data } = await api.me(token);
    if (saved.playerToken() !== token) return;
    saved.keepPlayer(token, data.name);
    S.playerId = data.id;
    showPlayer();
  } catch (error) {
    if (saved.playerToken() === token) refused(error);
  }
}

// A game opened without its own token (a link, another device): the player's if it is in
// their list (a few pages of that variant are looked at).
async function checkMine(seq, game) {
  const token = saved.playerToken();
  if (!token) return;
  let cursor = null;
  try {
    for (let page = 0; page < 3; page += 1) {
      const { data } = await api.myGames(token, { limit: 100, variant: game.variant, cursor });
      if (seq !== S.seq) return;
      for (const g of data.games) S.mine.add(g.id);
      if (S.mine.has(game.id) || !data.next_cursor) break;
      cursor = data.next_cursor;
    }
  } catch {
    return;
  }
  if (seq !== S.seq || !S.game || S.game.id !== game.id || !S.mine.has(game.id)) return;
  S.token = token;
  renderGame();
}

function leaveGame() {
  stopFollowing();
  closeReplay({ redraw: false });
  S.game = null;
  S.analysis = null;
  S.seq += 1;
  setConn("", "");
  $("new-game-top").hidden = false;
}

function noAccountText(what) {
  return `This device has no account yet: it is made when you deal your first game. ${what}`;
}

// --- My games ---------------------------------------------------------------------------------
const STATUS_LABELS = { playing: "In play", won: "Won", lost: "Lost", resigned: "Resigned" };

function variantName(id) {
  const variant = S.byId.get(id);
  return variant ? variant.name : id;
}

function fillVariantFilter() {
  const select = $("filter-variant");
  if (select.options.length > 1) return;
  for (const variant of S.variants) {
    const option = document.createElement("option");
    option.value = variant.id;
    option.textContent = variant.name;
    select.append(option);
  }
}

function showMyGames() {
  leaveGame();
  document.title = "My games \u2013 Patience";
  showSection("mygames");
  fillVariantFilter();
  loadMyGames(false);
}

async function loadMyGames(more) {
  const token = saved.playerToken();
  const seq = (S.listSeq += 1);
  const list = $("mygames-list");
  $("mygames-error").hidden = true;
  $("mygames-who").textContent = token ? `Playing as ${saved.playerName()}.` : "";
  if (!token) {
    list.replaceChildren();
    $("mygames-more").hidden = true;
    $("mygames-empty").textContent = noAccountText("Your games are listed here, on every device you use.");
    $("mygames-empty").hidden = false;
    return;
  }
  if (!more) {
    S.list = { games: [], cursor: null };
    list.replaceChildren();
    list.dataset.loaded = "0";
  }
  $("mygames-more").disabled = true;
  try {
    const { data } = await api.myGames(token, {
      limit: 20,
      variant: $("filter-variant").value,
      status: $("filter-status").value,
      cursor: more ? S.list.cursor : null,
    });
    if (seq !== S.listSeq) return;
    for (const game of data.games) {
      S.mine.add(game.id);
      S.list.games.push(game);
      list.append(myGameItem(game));
    }
    S.list.cursor = data.next_cursor;
    $("mygames-more").hidden = !data.next_cursor;
    const filtered = $("filter-variant").value || $("filter-status").value;
    $("mygames-empty").textContent = filtered ? "No game of yours matches." : "You have no game yet: deal one!";
    $("mygames-empty").hidden = S.list.games.length > 0 || Boolean(data.next_cursor);
    list.dataset.loaded = "1";
  } catch (error) {
    if (seq !== S.listSeq) return;
    if (refused(error)) {
      loadMyGames(false);
      return;
    }
    $("mygames-error").textContent = `Your games could not be read: ${error.message}`;
    $("mygames-error").hidden = false;
  } finally {
    $("mygames-more").disabled = false;
  }
}

function myGameItem(game) {
  const item = document.createElement("li");
  item.className = `mygame ${game.status}`;
  item.dataset.game = game.id;
  item.dataset.status = game.status;
  const link = document.createElement("a");
  link.href = `#game=${game.id}`;
  link.className = "mygame-link";
  const name = document.createElement("strong");
  name.textContent = variantName(game.variant);
  const status = document.createElement("span");
  status.className = "mygame-status";
  status.textContent = STATUS_LABELS[game.status] || game.status;
  const detail = document.createElement("span");
  detail.className = "mygame-detail";
  // A summary's figures are those of its last listed event: its moves once it ended.
  const dealt = game.created ? `dealt ${new Date(game.created).toLocaleString()}` : "";
  detail.textContent = game.ended
    ? `${plural(game.moves || 0, "move")}, ended ${new Date(game.ended).toLocaleString()}` : dealt;
  const action = document.createElement("span");
  action.className = "mygame-action";
  action.textContent = game.status === "playing" ? "Resume" : "Open";
  link.append(name, status, detail, action);
  item.append(link);
  return item;
}

// --- Statistics -------------------------------------------------------------------------------
function duration(ms) {
  if (ms === null || ms === undefined) return "\u2013";
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  const rest = Math.round(seconds - minutes * 60);
  return minutes < 60 ? `${minutes} min ${rest} s` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

function showStats() {
  leaveGame();
  document.title = "Statistics \u2013 Patience";
  showSection("stats");
  loadStats();
}

async function loadStats() {
  const token = saved.playerToken();
  const seq = (S.listSeq += 1);
  $("stats-error").hidden = true;
  $("stats-who").textContent = token ? `Playing as ${saved.playerName()}.` : "";
  $("stats-table").hidden = !token;
  $("stats-empty").hidden = Boolean(token);
  if (!token) {
    $("stats-empty").textContent = noAccountText("Your results are counted here, game by game.");
    return;
  }
  try {
    const { data } = await api.myStats(token);
    if (seq !== S.listSeq) return;
    const body = $("stats-body");
    body.replaceChildren();
    for (const row of data.variants) body.append(statsRow(row));
    body.dataset.loaded = "1";
  } catch (error) {
    if (seq !== S.listSeq) return;
    if (refused(error)) {
      loadStats();
      return;
    }
    $("stats-error").textContent = `Your statistics could not be read: ${error.message}`;
    $("stats-error").hidden = false;
  }
}

function statsRow(row) {
  const tr = document.createElement("tr");
  tr.dataset.variant = row.variant;
  const none = "\u2013";
  const cells = {
    variant: variantName(row.variant),
    played: row.played,
    won: row.won,
    lost: row.lost,
    resigned: row.resigned,
    in_play: row.in_play,
    win_rate: row.win_rate === null || row.win_rate === undefined ? none : `${Math.round(row.win_rate * 100)}%`,
    current_streak: row.current_streak,
    longest_streak: row.longest_streak,
    fewest_moves: row.fewest_moves ?? none,
    fastest_win: duration(row.fastest_win_ms),
  };
  for (const [key, value] of Object.entries(cells)) {
    const cell = document.createElement(key === "variant" ? "th" : "td");
    if (key === "variant") cell.scope = "row";
    cell.dataset.stat = key;
    cell.textContent = String(value);
    tr.append(cell);
  }
  return tr;
}

// --- the daily deal: the day's deals, my attempt, the day's board and my rank -------------
const BOARD_PAGE = 10;
const BOARD_MAX = 100;
const AROUND = 2;
// The board, its count and my rank are read again every BOARD_REFRESH_SECONDS while the
// Daily view is shown (its feed tells only of its top); a number of seconds kept under
// BOARD_REFRESH_KEY on this device (at least 1) is used instead.
const BOARD_REFRESH_SECONDS = 20;
const BOARD_REFRESH_KEY = "patience.daily.refreshSeconds";
const OUTCOMES = { won: "Won", lost: "Lost", resigned: "Resigned", abandoned: "Abandoned" };

function dailyVariantFromHash() {
  const params = new URLSearchParams(window.location.hash.replace(/^#/, ""));
  const variant = params.get("daily");
  return variant && S.byId.has(variant) ? variant : null;
}

function stopBoard() {
  if (S.daily.follower) S.daily.follower.stop();
  if (S.daily.refresher) S.daily.refresher.stop();
  if (S.daily.aborter) S.daily.aborter.abort();
  S.daily.follower = null;
  S.daily.refresher = null;
  S.daily.aborter = null;
  S.daily.reading = null;
}

function boardRefreshSeconds() {
  const kept = Number(saved.get(BOARD_REFRESH_KEY));
  return Number.isFinite(kept) && kept >= 1 ? kept : BOARD_REFRESH_SECONDS;
}

// The rows of a table made again: a row the same as the one shown stays (the focus on
// its link with it); only those that changed are replaced.
function syncRows(body, rows) {
  rows.forEach((row, index) => {
    const shown = body.children[index];
    if (!shown) body.append(row);
    else if (!shown.isEqualNode(row)) shown.replaceWith(row);
  });
  while (body.children.length > rows.length) body.lastElementChild.remove();
}

// A read given up because the board was left (stopBoard aborts the board's re-reads).
function aborted(error) {
  return Boolean(error) && error.name === "AbortError";
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function showDaily(variant) {
  leaveGame();
  document.title = "Daily deal \u2013 Patience";
  showSection("daily");
  loadDaily(variant);
}

function dailyFailed(text) {
  $("daily-error").textContent = text;
  $("daily-error").hidden = false;
}

// Today's deals, each with the player's attempt (none, in play, over), then the board.
async function loadDaily(variant) {
  const seq = (S.listSeq += 1);
  stopBoard();
  for (const board of Object.values(S.daily.ranks)) board.seq += 1;
  $("daily-error").hidden = true;
  const token = saved.playerToken();
  let today;
  try {
    ({ data: today } = await api.daily());
  } catch (error) {
    if (seq === S.listSeq) dailyFailed(`Today's deals could not be read: ${error.message}`);
    return;
  }
  if (seq !== S.listSeq) return;
  const ids = today.variants.map((v) => v.variant).filter((id) => S.byId.has(id));
  const kept = saved.get("patience.daily.variant");
  if (S.daily.day !== today.day) S.daily.boardDay = today.day;
  S.daily.day = today.day;
  S.daily.start = today.start;
  S.daily.end = today.end;
  S.daily.variant = [variant, S.daily.variant, kept].find((v) => v && ids.includes(v)) || ids[0];
  $("daily-when").textContent = `Today's deals (${today.day}, UTC) are open until `
    + `${new Date(today.end).toLocaleString()}.`;
  if (token && !S.playerId) {
    try {
      S.playerId = (await api.me(token)).data.id;
    } catch (error) {
      refused(error);
    }
  }
  const described = await Promise.all(ids.map(async (id) => {
    const summary = today.variants.find((v) => v.variant === id);
    let day = { ...summary, my_game: null, winnable: null };
    try {
      ({ data: day } = await api.dailyDay(id, today.day, saved.playerToken()));
    } catch {
      // Shown from today's summary; the attempt's button finds out the rest.
    }
    let mine = null;
    const gameId = day.my_game ? day.my_game.split("/").pop() : null;
    if (gameId) {
      S.mine.add(gameId);
      try {
        mine = (await api.game(gameId, undefined, saved.playerToken())).data;
      } catch {
        mine = { id: gameId, status: "playing" };
      }
    }
    return { day, mine };
  }));
  if (seq !== S.listSeq) return;
  const list = $("daily-deals");
  list.replaceChildren(...described.map(({ day, mine }) => dailyItem(day, mine)));
  list.dataset.loaded = "1";
  loadBoard(seq);
  if (S.daily.tab !== "day") loadRankBoard(S.daily.tab);
}

function dailyItem(day, mine) {
  const item = document.createElement("li");
  item.className = "daily-deal";
  item.dataset.variant = day.variant;
  item.dataset.attempt = mine ? (mine.status === "playing" ? "playing" : "over") : "none";
  if (day.variant === S.daily.variant) item.setAttribute("aria-current", "true");
  const name = document.createElement("strong");
  name.textContent = variantName(day.variant);
  const detail = document.createElement("span");
  detail.className = "daily-detail";
  item.dataset.players = String(day.players);
  item.dataset.entries = String(day.entries);
  if (day.winnable === true) item.dataset.winnable = "1";
  if (mine && mine.status !== "playing") item.dataset.you = STATUS_LABELS[mine.status] || mine.status;
  let action;
  if (mine) {
    action = document.createElement("a");
    action.className = "btn primary";
    action.href = `#game=${mine.id}`;
    action.textContent = mine.status === "playing" ? "Resume my attempt" : "See my game";
  } else {
    action = document.createElement("button");
    action.type = "button";
    action.className = "btn primary";
    action.textContent = "Start my attempt";
    action.addEventListener("click", () => startAttempt(day.variant, action));
  }
  action.classList.add("daily-action");
  action.setAttribute("aria-label", `${action.textContent}: ${variantName(day.variant)}`);
  const board = document.createElement("button");
  board.type = "button";
  board.className = "btn daily-show-board";
  board.textContent = "Board";
  board.setAttribute("aria-label", `The board of ${variantName(day.variant)}`);
  board.setAttribute("aria-controls", "daily-board-box");
  board.setAttribute("aria-pressed", String(day.variant === S.daily.variant));
  board.addEventListener("click", () => {
    saved.set("patience.daily.variant", day.variant);
    window.location.hash = `daily=${day.variant}`;
  });
  item.append(name, detail, action, board);
  describeDeal(item);
  return item;
}

// A deal's line: its players, its entries, whether it was proved winnable, my result.
function describeDeal(item) {
  const facts = [plural(Number(item.dataset.players), "player"),
    `${item.dataset.entries} on the board`];
  if (item.dataset.winnable) facts.push("proved winnable");
  if (item.dataset.you) facts.push(`you: ${item.dataset.you}`);
  setText(item.querySelector(".daily-detail"), facts.join(" \u00b7 "));
}

// Today's deal of a variant counts more players or entries: its line says so, in place.
function countDeal(variant, { players, entries }) {
  const item = [...$("daily-deals").children].find((li) => li.dataset.variant === variant);
  if (!item) return;
  if (players !== undefined) item.dataset.players = String(players);
  if (entries !== undefined) item.dataset.entries = String(entries);
  describeDeal(item);
}

// Today's players and entries of each deal, read again in the background (the refresher).
async function recountDeals(seq, signal) {
  try {
    const { data } = await quietApi.daily({ signal });
    if (seq !== S.listSeq) return false;
    if (data.day === S.daily.day) {
      for (const { variant, players, entries } of data.variants) countDeal(variant, { players, entries });
    }
    return true;
  } catch {
    return false;
  }
}

// The player's ranked attempt: the account is made first if this device has none.
async function startAttempt(variant, button) {
  button.disabled = true;
  $("daily-error").hidden = true;
  try {
    const token = await ensurePlayer(guestName());
    const { data } = await api.dailyAttempt(variant, S.daily.day, token);
    saved.remember(data.game, data.player_token);
    S.mine.add(data.game.id);
    S.preloaded = data.game;
    window.location.hash = `game=${data.game.id}`;
  } catch (error) {
    if (error instanceof ApiError && error.code === "attempt_taken") {
      loadDaily(variant); // made meanwhile (another tab or device): resume it
    } else if (refused(error)) {
      dailyFailed("This device's account is no longer valid on this server: try again to play as a new guest.");
    } else if (error instanceof ApiError && error.code === "account_too_new") {
      dailyFailed("Your account was made after today's deals began: ranked play opens to it tomorrow.");
    } else if (error instanceof ApiError && ["day_closed", "day_not_open"].includes(error.code)) {
      dailyFailed(`${error.detail}: the deals shown are now those of the new day.`);
      loadDaily(variant);
    } else {
      dailyFailed(`The attempt could not be started: ${error.message}`);
    }
  } finally {
    button.disabled = false;
  }
}

function boardRow(entry, dayOpen) {
  const tr = document.createElement("tr");
  tr.dataset.player = entry.player_id;
  tr.dataset.rank = String(entry.rank);
  tr.dataset.outcome = entry.outcome;
  const me = entry.player_id === S.playerId;
  if (me) tr.className = "me";
  const rank = document.createElement("td");
  rank.textContent = String(entry.rank);
  const name = document.createElement("td");
  const label = `${entry.name || "A player"}${me ? " (you)" : ""}`;
  // Another player's ranked game is theirs alone until the day is over.
  if (me || !dayOpen) {
    const link = document.createElement("a");
    link.href = `#game=${entry.game_id}`;
    link.textContent = label;
    name.append(link);
  } else {
    name.textContent = label;
  }
  const cells = [OUTCOMES[entry.outcome] || entry.outcome, entry.moves,
    duration(entry.time_ms), entry.cards_home].map((value) => {
    const td = document.createElement("td");
    td.textContent = String(value);
    return td;
  });
  tr.append(rank, name, ...cells);
  return tr;
}

// The board of the variant chosen: its first entries (or as many as are shown, when
// re-read for a change), my rank and the entries around it; then it is followed.
// The id of the day before the one that spans [start, end), as the server names days:
// the UTC date of its start (and its time, where days are shorter than 24 hours).
function previousDayId(start, end) {
  const period = Date.parse(end) - Date.parse(start);
  const iso = new Date(Date.parse(start) - period).toISOString();
  if (period % 86400000 === 0) return iso.slice(0, 10);
  return `${iso.slice(0, 10)}T${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}

function chooseBoardDay(yesterday) {
  if (!S.daily.day) return;
  const day = yesterday ? previousDayId(S.daily.start, S.daily.end) : S.daily.day;
  if (day === S.daily.boardDay) return;
  S.daily.boardDay = day;
  S.daily.shown = 0;
  S.daily.cursor = null;
  stopBoard();
  loadBoard((S.listSeq += 1));
}

// A past day's deal, shown with its board: its number and salt, with which anyone checks
// the commitment every attempt showed.
async function showPastDeal(seq, variant, day) {
  const node = $("daily-deal-shown");
  if (day === S.daily.day) {
    node.hidden = true;
    return;
  }
  try {
    const { data } = await api.dailyDay(variant, day);
    if (seq !== S.listSeq) return;
    node.textContent = data.seed === null || data.seed === undefined
      ? "There was no deal of this game that day."
      : `The deal was deal ${data.seed} (salt ${data.salt}); the players' games can be opened and replayed.`;
    node.hidden = false;
  } catch (error) {
    if (seq === S.listSeq) {
      node.textContent = `That day could not be read: ${error.message}`;
      node.hidden = false;
    }
  }
}

// quiet: a re-read in the background, whose failure leaves what is shown as it is and
// says nothing (its retries tell nothing either); signal aborts it. True when the board
// and my rank were read.
async function loadBoard(seq, { more = false, quiet = false, signal } = {}) {
  const { variant } = S.daily;
  const day = S.daily.boardDay || S.daily.day;
  if (!variant || !day) return false;
  const today = day === S.daily.day;
  $("daily-board-box").hidden = false;
  setText($("daily-board-title"), `The board of ${variantName(variant)}, ${day}`);
  $("daily-today").setAttribute("aria-pressed", String(today));
  $("daily-yesterday").setAttribute("aria-pressed", String(!today));
  if (!more && !S.daily.follower) showPastDeal(seq, variant, day);
  const body = $("daily-board-body");
  const limit = more ? BOARD_PAGE : Math.min(BOARD_MAX, Math.max(BOARD_PAGE, S.daily.shown));
  const dayOpen = today && Date.now() < Date.parse(S.daily.end);
  const pages = S.daily.pages;
  try {
    const { data } = await (quiet ? quietApi : api).dailyBoard(variant, day, {
      limit, cursor: more ? S.daily.cursor : null, signal,
    });
    if (seq !== S.listSeq) return false;
    // "More of the board" added a page meanwhile: read the board shown now instead.
    if (!more && S.daily.pages !== pages) return loadBoard(seq, { quiet, signal });
    if (more) S.daily.pages += 1;
    const rows = data.entries.map((entry) => boardRow(entry, dayOpen));
    if (more) body.append(...rows);
    else syncRows(body, rows);
    S.daily.shown = body.children.length;
    S.daily.cursor = data.next_cursor;
    $("daily-more").hidden = !data.next_cursor;
    $("daily-board-empty").hidden = data.count > 0;
    body.dataset.count = String(data.count);
    body.dataset.loaded = "1";
    if (today) countDeal(variant, { entries: data.count });
  } catch (error) {
    if (seq === S.listSeq && !quiet && !aborted(error)) {
      dailyFailed(`The board could not be read: ${error.message}`);
    }
    return false;
  }
  const ranked = await loadMyRank(seq, day, dayOpen, { quiet, signal });
  if (seq === S.listSeq && !S.daily.follower && !$("daily").hidden) followBoard(seq, day);
  return ranked;
}

async function loadMyRank(seq, day, dayOpen, { quiet = false, signal } = {}) {
  const text = $("daily-rank");
  const around = $("daily-around");
  const body = $("daily-around-body");
  if (!saved.playerToken() || !S.playerId) {
    setText(text, "You are not on this board: start your attempt to play today's deal.");
    around.hidden = true;
    return true;
  }
  try {
    const { data } = await (quiet ? quietApi : api).dailyAround(
      S.daily.variant, day, S.playerId, AROUND, { signal },
    );
    if (seq !== S.listSeq) return false;
    setText(text, `You are ranked ${data.rank} of ${data.count}.`);
    text.dataset.rank = String(data.rank);
    syncRows(body, data.entries.map((entry) => boardRow(entry, dayOpen)));
    around.hidden = false;
    return true;
  } catch (error) {
    if (seq !== S.listSeq || aborted(error)) return false;
    const absent = error instanceof ApiError && error.code === "not_on_board";
    if (quiet && !absent) return false;
    delete text.dataset.rank;
    around.hidden = true;
    setText(text, absent
      ? (dayOpen ? "You are not on this board yet: your entry comes when your game of the day ends."
        : "You are not on this board.")
      : `Your rank could not be read: ${error.message}`);
    return absent;
  }
}

// One re-read of the board shown at a time (its page, its count, my rank): a change the
// feed tells of during one asks for another after it; the refresher's turn during one
// waits for it. Resolves whether the last read went through.
function rereadBoard(seq, { quiet = false } = {}) {
  const current = S.daily.reading;
  if (current && current.seq === seq) {
    if (!quiet) {
      current.again = true;
      current.quiet = false;
    }
    return current.done;
  }
  const reading = { seq, again: false, quiet, done: null };
  const signal = S.daily.aborter ? S.daily.aborter.signal : undefined;
  S.daily.reading = reading;
  reading.done = (async () => {
    let ok = false;
    try {
      do {
        reading.again = false;
        ok = await loadBoard(seq, { quiet: reading.quiet, signal });
      } while (reading.again && seq === S.listSeq);
    } finally {
      if (S.daily.reading === reading) S.daily.reading = null;
    }
    return ok;
  })();
  return reading.done;
}

// Live: every change within the board's top (its events feed) re-reads the board at once;
// what changes below the top (the board's count, my rank, the deals' players and
// entries) is re-read by the refresher, every boardRefreshSeconds() while the page is
// visible. Both stop when the view is left.
function followBoard(seq, day) {
  stopBoard();
  const live = $("daily-live");
  S.daily.aborter = new AbortController();
  S.daily.follower = new BoardFollower({
    api,
    variant: S.daily.variant,
    day,
    onStatus: (state, text) => {
      if (seq !== S.listSeq) return;
      live.textContent = text;
      live.dataset.state = state;
    },
    onChange: () => {
      if (seq === S.listSeq) rereadBoard(seq);
    },
  });
  const { signal } = S.daily.aborter;
  S.daily.refresher = new Refresher({
    seconds: boardRefreshSeconds(),
    refresh: async () => {
      if (seq !== S.listSeq) return false;
      const counted = await recountDeals(seq, signal);
      if (seq !== S.listSeq) return false;
      const read = await rereadBoard(seq, { quiet: true });
      if (seq === S.listSeq && S.daily.tab !== "day") {
        await loadRankBoard(S.daily.tab, { quiet: true, signal });
      }
      return read && counted;
    },
  });
  S.daily.follower.start();
  S.daily.refresher.start();
}

// --- the week's board and the streaks' board of the variant chosen -----------------------
// Each is read when its tab is opened (again) or the variant changes while it is open,
// and by the day's refresher while it is open; not followed live: an entry lands there
// only when a game is won, at most one a player and day.

// The id of the ISO week of a day, YYYY-Www, as the server names the week of a day: that
// of the UTC date of the day's start (no answer of the server names today's week).
function isoWeekId(start) {
  const begun = new Date(Date.parse(start));
  const date = new Date(Date.UTC(begun.getUTCFullYear(), begun.getUTCMonth(), begun.getUTCDate()));
  date.setUTCDate(date.getUTCDate() + 4 - (date.getUTCDay() || 7)); // the week's Thursday
  const year = date.getUTCFullYear();
  const week = Math.floor((date - Date.UTC(year, 0, 1)) / 86400000 / 7) + 1;
  return `${year}-W${String(week).padStart(2, "0")}`;
}

// Per board: its title, its reads (a page, my rank with the entries around it), the
// figures of an entry after its rank and name, and what a player without an entry reads.
const RANK_BOARDS = {
  week: {
    title: (variant) => `This week's board of ${variantName(variant)} (${isoWeekId(S.daily.start)})`,
    page: (client, variant, options) => client.weekBoard(variant, isoWeekId(S.daily.start), options),
    around: (client, variant, player, options) => client.weekAround(
      variant, isoWeekId(S.daily.start), player, AROUND, options,
    ),
    name: "This week's board",
    figures: (entry) => [entry.won, entry.moves],
    absent: "You are not on this board: a day's deal you win this week puts you on it.",
  },
  streaks: {
    title: (variant) => `The streaks of ${variantName(variant)}`,
    page: (client, variant, options) => client.streaks(variant, options),
    around: (client, variant, player, options) => client.streaksAround(
      variant, player, AROUND, options,
    ),
    name: "The streaks' board",
    figures: (entry) => [entry.current, entry.longest, entry.last_day_won],
    absent: "You are not on this board: a day's deal you win puts you on it.",
  },
};
const BOARD_TABS = ["day", ...Object.keys(RANK_BOARDS)];

function rankRow(kind, entry) {
  const tr = document.createElement("tr");
  tr.dataset.player = entry.player_id;
  tr.dataset.rank = String(entry.rank);
  const me = entry.player_id === S.playerId;
  if (me) tr.className = "me";
  const name = `${entry.name || "A player"}${me ? " (you)" : ""}`;
  for (const value of [entry.rank, name, ...RANK_BOARDS[kind].figures(entry)]) {
    const cell = document.createElement("td");
    cell.textContent = String(value);
    tr.append(cell);
  }
  return tr;
}

// The board of a tab: its first page (more: the page after those shown), then my rank.
// In the background (quiet: the day's refresher, while the tab is open) as many entries
// as are shown are read again, and a failed read shows no error; a read of "More" under
// way is left to finish, not re-read over.
async function loadRankBoard(kind, { more = false, quiet = false, signal } = {}) {
  const board = S.daily.ranks[kind];
  const spec = RANK_BOARDS[kind];
  const { variant } = S.daily;
  if (!variant || !S.daily.start) return;
  if (quiet && $(`daily-${kind}-more`).disabled) return;
  const seq = more ? board.seq : (board.seq += 1);
  const title = spec.title(variant);
  setText($(`daily-${kind}-title`), title);
  const body = $(`daily-${kind}-body`);
  const button = $(`daily-${kind}-more`);
  if (board.shown !== title) { // another variant's (or week's) board: none of it stays
    board.shown = title;
    board.cursor = null;
    button.hidden = true;
    body.replaceChildren();
    delete body.dataset.count;
    delete body.dataset.loaded;
  }
  button.disabled = more;
  const limit = quiet && board.shown === title
    ? Math.min(BOARD_MAX, Math.max(BOARD_PAGE, body.children.length)) : BOARD_PAGE;
  try {
    const { data } = await spec.page(quiet ? quietApi : api, variant, {
      limit, cursor: more ? board.cursor : null, signal,
    });
    if (seq !== board.seq) return;
    const rows = data.entries.map((entry) => rankRow(kind, entry));
    if (more) body.append(...rows);
    else syncRows(body, rows);
    board.cursor = data.next_cursor;
    button.hidden = !data.next_cursor;
    $(`daily-${kind}-empty`).hidden = data.count > 0;
    body.dataset.count = String(data.count);
    body.dataset.loaded = "1";
    $(`daily-${kind}-error`).hidden = true;
  } catch (error) {
    if (seq === board.seq && !quiet && !aborted(error)) {
      // In the tab's own panel: the day's board and the deals above are not concerned.
      const failed = $(`daily-${kind}-error`);
      const said = error.message.replace(/[.\s]*$/, ".");
      failed.textContent = `${spec.name} could not be read: ${said} `
        + "It is read again while this tab stays open.";
      failed.hidden = false;
    }
    return;
  } finally {
    button.disabled = false;
  }
  if (!more) await loadRankAround(kind, seq, { quiet, signal });
}

async function loadRankAround(kind, seq, { quiet = false, signal } = {}) {
  const board = S.daily.ranks[kind];
  const spec = RANK_BOARDS[kind];
  const text = $(`daily-${kind}-rank`);
  const around = $(`daily-${kind}-around`);
  const body = $(`daily-${kind}-around-body`);
  let data = null;
  let failure = null;
  if (saved.playerToken() && S.playerId) {
    try {
      ({ data } = await spec.around(quiet ? quietApi : api, S.daily.variant, S.playerId,
        { signal }));
    } catch (error) {
      failure = error;
    }
    if (seq !== board.seq) return;
    // In the background, a read that failed (but for no entry) leaves what is shown.
    if (quiet && failure && !(failure instanceof ApiError && failure.code === "not_on_board")) {
      return;
    }
  }
  if (data) {
    setText(text, `You are ranked ${data.rank} of ${data.count}.`);
    text.dataset.rank = String(data.rank);
    syncRows(body, data.entries.map((entry) => rankRow(kind, entry)));
    around.hidden = false;
    return;
  }
  delete text.dataset.rank;
  around.hidden = true;
  // No entry (or no account yet) is a plain sentence, not an error.
  setText(text, !failure || (failure instanceof ApiError && failure.code === "not_on_board")
    ? spec.absent : `Your rank could not be read: ${failure.message}`);
}

// A tab chosen (a click, or the arrow keys, Home and End on the tabs): its board is
// shown, and read again unless it is the day's (which is followed live).
function chooseBoardTab(kind, { focus = false } = {}) {
  S.daily.tab = kind;
  for (const tab of BOARD_TABS) {
    const chosen = tab === kind;
    const button = $(`daily-tab-${tab}`);
    button.setAttribute("aria-selected", String(chosen));
    button.tabIndex = chosen ? 0 : -1;
    $(`daily-${tab}-panel`).hidden = !chosen;
  }
  if (focus) $(`daily-tab-${kind}`).focus();
  if (kind !== "day") loadRankBoard(kind);
}

function boardTabKey(event) {
  const at = BOARD_TABS.indexOf(S.daily.tab);
  const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: BOARD_TABS.length - 1 }[event.key];
  if (next === undefined) return;
  event.preventDefault();
  chooseBoardTab(BOARD_TABS[(next + BOARD_TABS.length) % BOARD_TABS.length], { focus: true });
}

// --- the account view: take it to another device ------------------------------------------
function showAccount() {
  leaveGame();
  document.title = "Your account \u2013 Patience";
  showSection("account");
  renderAccount();
}

function renderAccount() {
  const token = saved.playerToken();
  $("account-who").textContent = token ? `Playing as ${saved.playerName()}.` : "";
  $("account-create").hidden = Boolean(token);
  if (!token && !$("account-name").value) $("account-name").value = $("new-name").value || guestName();
  $("account-share").hidden = !token;
  $("account-token").value = token || "";
  $("account-token").type = "password";
  $("account-show").textContent = "Show";
  $("account-take-note").textContent = token
    ? " (keep this device's key first if you want to come back to it: it is replaced)" : "";
  $("account-paste").value = "";
  $("account-error").hidden = true;
}

async function createAccount(event) {
  event.preventDefault();
  $("account-create-btn").disabled = true;
  try {
    await ensurePlayer($("account-name").value);
    renderAccount();
  } catch (error) {
    $("account-error").textContent = `The account could not be made: ${error.message}`;
    $("account-error").hidden = false;
  } finally {
    $("account-create-btn").disabled = false;
  }
}

async function takeAccount(event) {
  event.preventDefault();
  const token = $("account-paste").value.trim();
  const err = $("account-error");
  err.hidden = true;
  if (!/^[A-Za-z0-9._~+/=-]{10,4096}$/.test(token)) {
    err.textContent = "That is not an account key: copy the whole key shown on your other device.";
    err.hidden = false;
    return;
  }
  $("account-use").disabled = true;
  try {
    const { data } = await api.me(token);
    saved.keepPlayer(token, data.name);
    S.playerId = data.id;
    S.mine.clear();
    showPlayer();
    window.location.hash = "games";
  } catch (error) {
    err.textContent = error instanceof ApiError && error.status === 401
      ? "The server does not know that key (it may have been replaced or revoked)."
      : `The key could not be checked: ${error.message}`;
    err.hidden = false;
  } finally {
    $("account-use").disabled = false;
  }
}

function wireAccount() {
  $("filter-variant").addEventListener("change", () => loadMyGames(false));
  $("filter-status").addEventListener("change", () => loadMyGames(false));
  $("mygames-filters").addEventListener("submit", (e) => e.preventDefault());
  $("mygames-more").addEventListener("click", () => loadMyGames(true));
  $("daily-more").addEventListener("click", () => loadBoard(S.listSeq, { more: true }));
  $("daily-today").addEventListener("click", () => chooseBoardDay(false));
  $("daily-yesterday").addEventListener("click", () => chooseBoardDay(true));
  for (const tab of BOARD_TABS) $(`daily-tab-${tab}`).addEventListener("click", () => chooseBoardTab(tab));
  $("daily-tabs").addEventListener("keydown", boardTabKey);
  for (const kind of Object.keys(RANK_BOARDS)) {
    $(`daily-${kind}-more`).addEventListener("click", () => loadRankBoard(kind, { more: true }));
  }
  $("account-create").addEventListener("submit", createAccount);
  $("account-take").addEventListener("submit", takeAccount);
  $("account-show").addEventListener("click", () => {
    const input = $("account-token");
    const shown = input.type === "text";
    input.type = shown ? "password" : "text";
    $("account-show").textContent = shown ? "Show" : "Hide";
  });
  $("account-copy").addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText($("account-token").value);
      $("account-copy").textContent = "Copied";
    } catch {
      $("account-token").type = "text";
      $("account-token").select();
      $("account-copy").textContent = "Press Ctrl+C";
    }
    setTimeout(() => { $("account-copy").textContent = "Copy"; }, 1500);
  });
  // Another tab of this device took or made an account.
  window.addEventListener("storage", (event) => {
    if (event.key && event.key.startsWith("patience.player.")) showPlayer();
  });
}

// --- start ---------------------------------------------------------------------------------
function wire() {
  table = new TableView($("table"), {
    onPile,
    onDrop,
    onDragStart: (pileId) => {
      if (!isPlayer() || !playing()) return;
      S.selected = pileId;
      S.hint = null;
      renderGame();
    },
    canDrag: (pileId) => isPlayer() && playing() && !S.busy && pileId !== "stock",
  });
  preview = new TableView($("preview"), { onPile() {}, onDrop() {}, onDragStart() {}, canDrag: () => false });
  $("new-game").addEventListener("submit", startGame);
  $("new-game-btn").addEventListener("click", () => { window.location.hash = ""; });
  $("new-game-top").addEventListener("click", () => { window.location.hash = ""; });
  $("home-link").addEventListener("click", (e) => {
    e.preventDefault();
    window.location.hash = "";
  });
  $("undo-btn").addEventListener("click", undo);
  $("hint-btn").addEventListener("click", hint);
  $("autoplay-btn").addEventListener("click", autoplay);
  $("resign-btn").addEventListener("click", () => {
    $("resign-confirm").hidden = false;
    $("resign-yes").focus();
  });
  $("resign-no").addEventListener("click", () => {
    $("resign-confirm").hidden = true;
    $("resign-btn").focus();
  });
  $("resign-yes").addEventListener("click", () => {
    $("resign-confirm").hidden = true;
    send({ type: "resign" });
  });
  $("replay-btn").addEventListener("click", startReplay);
  $("replay-prev").addEventListener("click", () => replayStep(-1));
  $("replay-next").addEventListener("click", () => replayStep(1));
  $("replay-close").addEventListener("click", () => closeReplay());
  $("winnable").addEventListener("change", () => {
    $("seed").disabled = $("winnable").checked;
  });
  $("delete-btn").addEventListener("click", () => { $("delete-confirm").hidden = false; });
  $("delete-no").addEventListener("click", () => { $("delete-confirm").hidden = true; });
  $("delete-yes").addEventListener("click", removeGame);
  $("copy-link").addEventListener("click", async () => {
    const input = $("share-link");
    try {
      await navigator.clipboard.writeText(input.value);
      $("copy-link").textContent = "Copied";
    } catch {
      input.select();
      $("copy-link").textContent = "Press Ctrl+C";
    }
    setTimeout(() => { $("copy-link").textContent = "Copy"; }, 1500);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") cancel();
  });
  window.addEventListener("hashchange", route);
  wireAccount();
}

async function boot() {
  wire();
  try {
    const { data } = await api.variants();
    S.variants = data.variants;
    S.byId = new Map(S.variants.map((v) => [v.id, v]));
  } catch (error) {
    $("boot").textContent = `The games could not be loaded (${error.message}). Reload the page to try again.`;
    $("boot").classList.add("error");
    return;
  }
  $("boot").hidden = true;
  buildLobby();
  showPlayer();
  // A first visit makes this device's guest player (its token kept in the browser); a
  // later one checks the account it keeps.
  if (saved.playerToken()) checkAccount();
  else ensurePlayer(guestName()).then(() => { $("name-field").hidden = true; }).catch(() => {});
  route();
}

boot();
