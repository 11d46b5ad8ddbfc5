// Following a game: the events feed (Server-Sent Events, resumable with Last-Event-ID),
// with reconnection and backoff; polling GET /v1/games/<id> where the feed is missing.

import { ApiError, NetworkError, paths, request } from "./api.js";

const POLL_SECONDS = 2.5;
const MAX_BACKOFF = 30;
// The feed's events (openapi.yaml): "move" and "undo" entries, "game" (the whole game,
// when the feed cannot reach back to our version), "end" (with the final game) and
// "deleted". Each of the first four is handled alike: a newer game, or a re-read.
const EVENT_NAMES = ["move", "undo", "game", "end"];

export class Follower {
  // api: Api; getVersion(): the version shown; onEntry(entry|null): something happened
  // after that version (entry may carry .game); onStatus(state, text): connection state
  // ("live", "reconnecting", "offline", "polling", "gone"); onGone(): the game is deleted.
  constructor({ api, gameId, getVersion, onEntry, onStatus, onGone }) {
    Object.assign(this, { api, gameId, getVersion, onEntry, onStatus, onGone });
    this.es = null;
    this.timer = null;
    this.stopped = false;
    this.backoff = 1;
    this.mode = "stream";
    this.errorsSinceOpen = 0;
    this.onOnline = () => this.reconnectNow();
    this.onOffline = () => {
      this.down = true;
      this.onStatus("offline", "Offline: waiting for the network to come back.");
    };
    window.addEventListener("online", this.onOnline);
    window.addEventListener("offline", this.onOffline);
  }

  start() {
    if (typeof EventSource === "undefined") {
      this.startPolling("This browser has no EventSource: checking for changes every few seconds.");
      return;
    }
    this.openStream();
  }

  stop() {
    this.stopped = true;
    this.closeStream();
    clearTimeout(this.timer);
    window.removeEventListener("online", this.onOnline);
    window.removeEventListener("offline", this.onOffline);
  }

  closeStream() {
    if (this.es) {
      this.es.close();
      this.es = null;
    }
  }

  openStream() {
    if (this.stopped) return;
    this.closeStream();
    const es = new EventSource(paths.events(this.gameId, this.getVersion()));
    this.es = es;
    this.errorsSinceOpen = 0;
    es.onopen = () => {
      if (es !== this.es) return;
      const wasDown = this.backoff > 1 || this.errorsSinceOpen > 0;
      this.backoff = 1;
      this.errorsSinceOpen = 0;
      this.onStatus("live", "Live");
      // Anything missed while the connection was down comes as events (resumed after
      // Last-Event-ID); a re-read of the game makes sure all the same.
      if (wasDown) this.onEntry(null);
    };
    const handle = (event) => {
      if (es !== this.es) return;
      let entry = null;
      try {
        entry = JSON.parse(event.data);
      } catch {
        entry = null;
      }
      this.onEntry(entry, event.lastEventId);
      // "end" is the feed's last word: the game is over and the server closes the stream.
      if (event.type === "end") this.finish();
    };
    es.onmessage = handle;
    for (const name of EVENT_NAMES) es.addEventListener(name, handle);
    es.addEventListener("deleted", () => {
      if (es === this.es) this.gone();
    });
    es.onerror = () => {
      if (es !== this.es || this.stopped) return;
      this.errorsSinceOpen += 1;
      // A dropped stream that had opened: the browser reconnects by itself, resuming
      // with Last-Event-ID. Anything else (refused, or failing again): our own backoff.
      if (es.readyState === EventSource.CONNECTING && this.errorsSinceOpen === 1) {
        this.onStatus("reconnecting", "Connection to the live feed lost: reconnecting\u2026");
        return;
      }
      this.closeStream();
      this.recover();
    };
  }

  // The game is over: nothing more will happen, so stop following (no reconnecting).
  finish() {
    this.onStatus("ended", "The game is over.");
    this.stop();
  }

  // The game was deleted (or has expired): say so and stop following.
  gone() {
    this.onStatus("gone", "This game no longer exists.");
    this.onGone();
    this.stop();
  }

  // gone() when a request failed because the game no longer exists; false otherwise.
  goneOn(error) {
    if (!(error instanceof ApiError && error.code === "game_not_found")) return false;
    this.gone();
    return true;
  }

  // Why did the stream fail? Ask the JSON form of the same endpoint.
  async recover() {
    if (this.stopped) return;
    try {
      const { data } = await this.api.eventsSince(this.gameId, this.getVersion());
      if (this.stopped) return;
      if (data && (data.game || (data.events && data.events.length))) this.onEntry(data);
      if (data && data.game && data.game.status !== "playing") {
        this.finish();
        return;
      }
      this.retryStream(this.backoff, "The live feed closed: reconnecting");
    } catch (error) {
      if (this.stopped || this.goneOn(error)) return;
      if (error instanceof ApiError && (error.routeMissing || error.status === 406)) {
        this.startPolling(
          `Live events are not available on this server (GET /events answered ${error.status}): `
          + `checking for changes every ${POLL_SECONDS} s instead.`,
        );
      } else if (error instanceof NetworkError) {
        this.retryStream(this.backoff, "Connection lost: reconnecting");
      } else {
        this.retryStream(this.backoff, `The live feed failed (${error.message}): reconnecting`);
      }
    }
  }

  retryStream(seconds, text) {
    this.onStatus(navigator.onLine === false ? "offline" : "reconnecting", `${text} in ${seconds} s\u2026`);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.onEntry(null); // re-read the game: it may have changed meanwhile
      this.openStream();
    }, seconds * 1000);
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF);
  }

  reconnectNow() {
    if (this.stopped) return;
    this.backoff = 1;
    if (this.mode === "poll") {
      clearTimeout(this.timer);
      this.poll();
    } else if (!this.es || this.es.readyState === EventSource.CLOSED) {
      clearTimeout(this.timer);
      this.onEntry(null);
      this.openStream();
    } else if (this.es.readyState === EventSource.OPEN) {
      // The stream survived the outage: say so, and re-read the game all the same.
      this.onStatus("live", "Live");
      this.onEntry(null);
    }
  }

  // --- polling, where the events feed is not deployed ----------------------------------
  startPolling(note) {
    this.mode = "poll";
    this.closeStream();
    this.pollNote = note;
    this.onStatus("polling", note);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.poll(), POLL_SECONDS * 1000);
  }

  async poll() {
    if (this.stopped) return;
    let wait = POLL_SECONDS;
    try {
      const { status, data } = await request(
        "GET", paths.game(this.gameId), { ifNoneMatch: this.getVersion() },
      );
      if (this.stopped) return;
      if (this.down) this.onStatus("polling", this.pollNote);
      this.down = false;
      this.backoff = 1;
      if (status === 200 && data) this.onEntry({ game: data });
      if (status === 200 && data && data.status !== "playing") {
        this.finish();
        return;
      }
    } catch (error) {
      if (this.stopped || this.goneOn(error)) return;
      wait = this.backoff;
      this.down = true;
      this.onStatus(navigator.onLine === false ? "offline" : "reconnecting",
        `Connection lost: trying again in ${wait} s\u2026`);
      this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF);
    }
    this.timer = setTimeout(() => this.poll(), wait * 1000);
  }
}

// Following a day's board: its events feed, one event for each entry that lands in the
// board's top (with its rank). As Server-Sent Events where the server streams the feed
// (resumed with Last-Event-ID, as a game's); while the stream is refused or cannot be
// reached (a server at its cap of streams, a proxy that serves the feed as JSON only, a
// lost connection), the feed is asked for the events after the last one seen every few
// seconds, and the stream is tried again after 2 s, then twice as long each time it
// fails again, up to a minute. Each event that comes makes the page re-read the board.
const BOARD_POLL_SECONDS = 2;
const BOARD_STREAM_RETRY_SECONDS = 2;
const BOARD_STREAM_RETRY_MAX = 60;

export class BoardFollower {
  // api: Api; onChange(): the board changed; onStatus(state, text) as for a game.
  constructor({ api, variant, day, onChange, onStatus }) {
    Object.assign(this, { api, variant, day, onChange, onStatus });
    this.es = null;
    this.timer = null; // the next read of the JSON feed, while the stream is not open
    this.retryTimer = null; // the next try of the stream
    this.retrySeconds = BOARD_STREAM_RETRY_SECONDS;
    this.live = false; // the stream is open
    this.stopped = false;
    this.failures = 0;
    this.last = null; // the id of the last event seen
  }

  async start() {
    // Where the feed stands now; the board is read again after it, so that an entry
    // that landed between the page's read of the board and this one is not missed.
    await this.read(false);
    if (this.stopped) return;
    this.onChange();
    if (typeof EventSource === "undefined") this.startPolling();
    else this.openStream();
  }

  stop() {
    this.stopped = true;
    if (this.es) this.es.close();
    this.es = null;
    clearTimeout(this.timer);
    clearTimeout(this.retryTimer);
  }

  // The JSON feed after the last event seen; true when it answered.
  async read(notify) {
    try {
      const { data } = await this.api.dailyEvents(this.variant, this.day, this.last || "0");
      if (this.stopped) return true;
      const changed = this.last !== null && data.events.length > 0;
      this.last = data.last_event_id;
      if (changed && notify) this.onChange();
      return true;
    } catch {
      return false;
    }
  }

  openStream() {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const es = new EventSource(paths.dailyEvents(this.variant, this.day, this.last || "0"));
    this.es = es;
    let opened = false;
    const changed = (event) => {
      if (es !== this.es) return;
      if (event.lastEventId) this.last = event.lastEventId;
      this.onChange();
    };
    es.onopen = () => {
      if (es !== this.es) return;
      opened = true;
      this.live = true;
      this.failures = 0;
      this.retrySeconds = BOARD_STREAM_RETRY_SECONDS;
      clearTimeout(this.timer); // no more reads of the JSON feed: the stream tells
      this.timer = null;
      this.onStatus("live", "Live: the board changes as players finish.");
    };
    es.onmessage = changed;
    es.addEventListener("entry", changed);
    es.onerror = () => {
      if (es !== this.es || this.stopped) return;
      // A stream that was open and dropped: the browser reconnects by itself.
      if (opened && es.readyState === EventSource.CONNECTING) {
        this.onStatus("reconnecting", "Connection to the board's feed lost: reconnecting\u2026");
        return;
      }
      // Refused, or not a stream at all (a feed served as JSON only), or failing again:
      // ask the JSON feed meanwhile, and try the stream again later.
      es.close();
      this.es = null;
      this.live = false;
      this.startPolling();
      this.retryStream();
    };
  }

  retryStream() {
    clearTimeout(this.retryTimer);
    const seconds = this.retrySeconds;
    this.retrySeconds = Math.min(this.retrySeconds * 2, BOARD_STREAM_RETRY_MAX);
    this.retryTimer = setTimeout(() => this.openStream(), seconds * 1000);
  }

  startPolling() {
    if (this.stopped || this.live) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(async () => {
      if (this.stopped || this.live) return;
      const answered = await this.read(true);
      if (this.stopped || this.live) return;
      this.failures = answered ? 0 : this.failures + 1;
      this.onStatus(answered ? "polling" : "reconnecting", answered
        ? `Following: the board's feed is read every ${BOARD_POLL_SECONDS} s.`
        : "The board's feed cannot be reached: trying again\u2026");
      this.startPolling();
    }, BOARD_POLL_SECONDS * 1000 * Math.min(8, 2 ** this.failures));
  }
}

// Re-reading what a board's feed does not tell. The feed announces only the entries that
// land within the board's top, so an entry below it changes the board's count and the
// player's rank unannounced: refresh() re-reads them every `seconds` while the page is
// visible, and at once when it becomes visible again; nothing while it is hidden. One
// read at a time (the next is timed from the end of the last); refresh() resolves false
// when its read failed (its requests retry lost connections, 429 and 503 themselves,
// after Retry-After), and the next read then waits twice as long, up to 8 times.
const MAX_REFRESH_FACTOR = 8;

export class Refresher {
  constructor({ seconds, refresh }) {
    Object.assign(this, { seconds, refresh });
    this.timer = null;
    this.stopped = false;
    this.running = false;
    this.failures = 0;
    this.onVisibility = () => {
      if (this.stopped) return;
      clearTimeout(this.timer);
      this.timer = null;
      if (Refresher.visible()) this.run();
    };
  }

  static visible() {
    return document.visibilityState !== "hidden";
  }

  start() {
    document.addEventListener("visibilitychange", this.onVisibility);
    this.schedule();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = null;
    document.removeEventListener("visibilitychange", this.onVisibility);
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.stopped || !Refresher.visible()) return;
    const factor = Math.min(MAX_REFRESH_FACTOR, 2 ** this.failures);
    this.timer = setTimeout(() => this.run(), this.seconds * 1000 * factor);
  }

  async run() {
    if (this.stopped || this.running || !Refresher.visible()) return;
    this.running = true;
    let ok = false;
    try {
      ok = await this.refresh();
    } catch {
      ok = false;
    } finally {
      this.running = false;
    }
    if (this.stopped) return;
    this.failures = ok ? 0 : this.failures + 1;
    this.schedule();
  }
}
