// A small Patience Server client for browsers and Node 18+, typed from openapi.yaml.
//
//   npm ci && npm run generate && npm run check
//
// `npm run generate` writes generated/openapi.d.ts with openapi-typescript; this file uses
// only those types and `fetch`. It plays a game by following the server's hints: it
// reads each answer's ETag and sends it back as If-Match, sends each card move with its
// card, and a refused move arrives as a typed problem (application/problem+json). And
// the daily deal: a player's ranked attempt, a move, the day's board and their rank.

import type { components, paths } from "./generated/openapi";

type Schemas = components["schemas"];
export type Game = Schemas["Game"];
export type Move = Schemas["Move"];
export type ListedMove = Schemas["ListedMove"];
export type Problem = Schemas["Problem"];
export type VariantId = Schemas["VariantId"];
export type PileId = Schemas["PileId"];

type CreateBody = paths["/v1/games"]["post"]["requestBody"]["content"]["application/json"];
type Created = paths["/v1/games"]["post"]["responses"]["201"]["content"]["application/json"];
type MoveResult =
  paths["/v1/games/{id}/moves"]["post"]["responses"]["200"]["content"]["application/json"];
type Hint = paths["/v1/games/{id}/hint"]["get"]["responses"]["200"]["content"]["application/json"];
type Refusal =
  paths["/v1/games/{id}/moves"]["post"]["responses"]["422"]["content"]["application/problem+json"];
type MoveHeaders = paths["/v1/games/{id}/moves"]["post"]["parameters"]["header"];
type LegalMoves =
  paths["/v1/games/{id}/moves"]["get"]["responses"]["200"]["content"]["application/json"];
export type DailyOverview = Schemas["DailyOverview"];
export type DayBoard = Schemas["DayBoard"];
export type BoardAround = Schemas["BoardAround"];
export type BoardEntry = Schemas["BoardEntry"];
type Attempt =
  paths["/v1/daily/{variant}/{day}"]["post"]["responses"]["201"]["content"]["application/json"];
type AttemptRefusal =
  paths["/v1/daily/{variant}/{day}"]["post"]["responses"]["409"]["content"]["application/problem+json"];
type BoardQuery = paths["/v1/daily/{variant}/{day}/board"]["get"]["parameters"]["query"];

/** A refusal: the status and the problem details the server sent. */
export class ProblemError extends Error {
  constructor(readonly status: number, readonly problem: Problem) {
    super(`${problem.code}: ${problem.detail}`);
  }
}

export type Answer<T> = { body: T; etag: string | null };

export class PatienceClient {
  constructor(private readonly base: string) {}

  private async send<T>(path: string, init: RequestInit = {}): Promise<Answer<T>> {
    const response = await fetch(this.base + path, init);
    if (response.headers.get("Content-Type")?.startsWith("application/problem+json")) {
      throw new ProblemError(response.status, (await response.json()) as Problem);
    }
    return { body: (await response.json()) as T, etag: response.headers.get("ETag") };
  }

  create(body: CreateBody, idempotencyKey?: string): Promise<Answer<Created>> {
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    return this.send<Created>("/v1/games", { method: "POST", headers, body: JSON.stringify(body) });
  }

  /** The game, or null when it is still at the version of `etag` (304). */
  async read(id: string, etag?: string): Promise<Answer<Game> | null> {
    const response = await fetch(`${this.base}/v1/games/${encodeURIComponent(id)}`, {
      headers: etag === undefined ? {} : { "If-None-Match": etag },
    });
    if (response.status === 304) return null;
    if (!response.ok) throw new ProblemError(response.status, (await response.json()) as Problem);
    return { body: (await response.json()) as Game, etag: response.headers.get("ETag") };
  }

  hint(id: string): Promise<Answer<Hint>> {
    return this.send<Hint>(`/v1/games/${encodeURIComponent(id)}/hint`);
  }

  /** The legal moves; a ranked game's while its day is open need its player's token. */
  legalMoves(id: string, playerToken?: string): Promise<Answer<LegalMoves>> {
    const headers: Record<string, string> =
      playerToken === undefined ? {} : { Authorization: `Bearer ${playerToken}` };
    return this.send<LegalMoves>(`/v1/games/${encodeURIComponent(id)}/moves`, { headers });
  }

  /** Today: its day id, its end, per variant the deal's commitment and counts. */
  today(): Promise<Answer<DailyOverview>> {
    return this.send<DailyOverview>("/v1/daily");
  }

  /** The player's ranked attempt at a day's deal (one a day: 409 attempt_taken). */
  attempt(variant: VariantId, day: string, playerToken: string): Promise<Answer<Attempt>> {
    return this.send<Attempt>(`/v1/daily/${encodeURIComponent(variant)}/${encodeURIComponent(day)}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${playerToken}` },
    });
  }

  /** A page of a day's board, best first; `next_cursor` asks for the next. */
  board(variant: VariantId, day: string, query: BoardQuery = {}): Promise<Answer<DayBoard>> {
    const search = new URLSearchParams();
    if (query?.limit !== undefined) search.set("limit", String(query.limit));
    if (query?.cursor !== undefined) search.set("cursor", query.cursor);
    const path = `/v1/daily/${encodeURIComponent(variant)}/${encodeURIComponent(day)}/board`;
    return this.send<DayBoard>(`${path}?${search.toString()}`);
  }

  /** A player's rank on a day's board and the `around` entries either side. */
  rank(variant: VariantId, day: string, playerId: string, around = 2): Promise<Answer<BoardAround>> {
    const path = `/v1/daily/${encodeURIComponent(variant)}/${encodeURIComponent(day)}`
      + `/board/players/${encodeURIComponent(playerId)}?around=${around}`;
    return this.send<BoardAround>(path);
  }

  play(id: string, token: string, move: Move, ifMatch?: string): Promise<Answer<MoveResult>> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${token}`,
      "Content-Type": "application/json",
    };
    const conditional: MoveHeaders = ifMatch === undefined ? {} : { "If-Match": ifMatch };
    return this.send<MoveResult>(`/v1/games/${encodeURIComponent(id)}/moves`, {
      method: "POST",
      headers: { ...headers, ...conditional },
      body: JSON.stringify(move),
    });
  }
}

/** The move to post for a listed (hinted) move: a card move keeps its `card`, which the
 * server checks (409 card_mismatch when another card would move). */
export function toMove(listed: ListedMove): Move {
  switch (listed.type) {
    case "move":
      return { type: "move", from: listed.from, to: listed.to, card: listed.card };
    default:
      return listed;
  }
}

/** Plays a game of `variant` by hints to its end; answers the final game. */
export async function playByHints(client: PatienceClient, variant: VariantId): Promise<Game> {
  const created = await client.create({ variant, seed: 7 });
  const token: string = created.body.player_token;
  let game: Game = created.body.game;
  let etag = created.etag ?? `"${game.version}"`;
  while (game.status === "playing") {
    const { body: hint } = await client.hint(game.id);
    const move: Move = hint.move === null ? { type: "resign" } : toMove(hint.move);
    try {
      const played = await client.play(game.id, token, move, etag);
      game = played.body.game;
      etag = played.etag ?? `"${game.version}"`;
    } catch (error) {
      const stale = ["version_mismatch", "card_mismatch"];
      if (error instanceof ProblemError && stale.includes(error.problem.code)) {
        const fresh = await client.read(game.id);
        if (fresh !== null) ({ body: game } = fresh);
        etag = `"${game.version}"`;
        continue;
      }
      throw error;
    }
  }
  return game;
}

/** A refused move's problem, typed: its code is one of the documented codes. */
export function describeRefusal(problem: Refusal): string {
  const pile: PileId = "foundation-1";
  return `${problem.status} ${problem.code} (${problem.title}); e.g. a move onto ${pile}`;
}

/** The player's ranked attempt at today's deal of `variant`: one listed move, then a
 * resign (the end puts the player on the day's board); answers the whole board, page by
 * page, and the player's rank. A second attempt is refused: 409 attempt_taken. */
export async function playTheDailyDeal(
  client: PatienceClient, playerToken: string, playerId: string, variant: VariantId,
): Promise<{ entries: BoardEntry[]; rank: number }> {
  const { body: today } = await client.today();
  const { body: attempt, etag } = await client.attempt(variant, today.day, playerToken);
  let game: Game = attempt.game;
  const { body: legal } = await client.legalMoves(game.id, playerToken);
  const first = legal.moves[0];
  if (first !== undefined) {
    game = (await client.play(game.id, playerToken, toMove(first), etag ?? undefined)).body.game;
  }
  const over = await client.play(game.id, playerToken, { type: "resign" }, `"${game.version}"`);
  const result = over.body.game.ranked?.result ?? null;
  if (result === null) throw new Error("a ranked game's end carries its result");
  const entries: BoardEntry[] = [];
  let cursor: string | null = null;
  do {
    const query: BoardQuery = cursor === null ? { limit: 50 } : { limit: 50, cursor };
    const { body: page } = await client.board(variant, today.day, query);
    entries.push(...page.entries);
    cursor = page.next_cursor;
  } while (cursor !== null);
  const { body: mine } = await client.rank(variant, today.day, playerId, 2);
  return { entries, rank: mine.rank };
}

/** A refused attempt's problem, typed. */
export function describeAttemptRefusal(problem: AttemptRefusal): string {
  return problem.code === "attempt_taken"
    ? "one ranked attempt a day: resume the game you started"
    : `${problem.status} ${problem.code}: ${problem.detail}`;
}
