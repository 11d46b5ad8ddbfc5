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

// Following a day's board: its events feed (Server-Sent Events, as a game's), each event
// a change within the board's top entries; the page re-reads the board when one comes.
// Where the feed is missing or keeps failing, the board is re-read every few seconds.
const BOARD_POLL_SECONDS = 3;

export class BoardFollower {
  // onChange(): the board may have changed; onStatus(state, text) as for a game.
  constructor({ variant, day, onChange, onStatus }) {
    Object.assign(this, { variant, day, onChange, onStatus });
    this.es = null;
    this.timer = null;
    this.stopped = false;
    this.failures = 0;
  }

  start() {
    if (typeof EventSource === "undefined") this.startPolling();
    else this.openStream();
  }

  stop() {
    this.stopped = true;
    if (this.es) this.es.close();
    this.es = null;
    clearTimeout(this.timer);
  }

  openStream() {
    if (this.stopped) return;
    const es = new EventSource(paths.dailyEvents(this.variant, this.day));
    this.es = es;
    const changed = () => {
      if (es === this.es) this.onChange();
    };
    es.onopen = () => {
      if (es !== this.es) return;
      const wasDown = this.failures > 0;
      this.failures = 0;
      this.onStatus("live", "Live: the board changes as players finish.");
      if (wasDown) this.onChange();
    };
    // Any event of the board's feed is a change of its top (whatever its name).
    es.onmessage = changed;
    for (const name of ["entry", "board", "enter", "move", "rank", "update"]) {
      es.addEventListener(name, changed);
    }
    es.onerror = () => {
      if (es !== this.es || this.stopped) return;
      this.failures += 1;
      if (es.readyState === EventSource.CONNECTING && this.failures === 1) {
        this.onStatus("reconnecting", "Connection to the board's feed lost: reconnecting\u2026");
        return;
      }
      es.close();
      this.es = null;
      this.startPolling();
    };
  }

  startPolling() {
    if (this.stopped) return;
    this.onStatus("polling", `Following: the board is re-read every ${BOARD_POLL_SECONDS} s.`);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.stopped) return;
      this.onChange();
      this.startPolling();
    }, BOARD_POLL_SECONDS * 1000);
  }
}
