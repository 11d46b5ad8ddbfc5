// A small Patience Server client for browsers and Node 18+, typed from openapi.yaml.
//
//   npm ci && npm run generate && npm run check
//
// `npm run generate` writes generated/openapi.d.ts with openapi-typescript; this file uses
// only those types and `fetch`. It plays a game by following the server's hints: it
// reads each answer's ETag and sends it back as If-Match, sends each card move with its
// card, and a refused move arrives as a typed problem (application/problem+json).

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
