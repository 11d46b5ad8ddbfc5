// Card codes of the API (openapi.yaml, "Card": "7H", "TD", "QS"): rank character + suit character.

export const SUITS = {
  S: { symbol: "\u2660", name: "spades", red: false },
  H: { symbol: "\u2665", name: "hearts", red: true },
  D: { symbol: "\u2666", name: "diamonds", red: true },
  C: { symbol: "\u2663", name: "clubs", red: false },
};

const RANKS = {
  A: { short: "A", name: "ace", face: false },
  T: { short: "10", name: "10", face: false },
  J: { short: "J", name: "jack", face: true },
  Q: { short: "Q", name: "queen", face: true },
  K: { short: "K", name: "king", face: true },
};
for (let n = 2; n <= 9; n += 1) RANKS[String(n)] = { short: String(n), name: String(n), face: false };

// U+FE0E asks for the text (not the emoji) form of the suit symbols.
const TEXT_FORM = "\uFE0E";

export function parseCard(code) {
  const rank = RANKS[code[0]];
  const suit = SUITS[code[1]];
  if (!rank || !suit || code.length !== 2) {
    return { code, short: code, symbol: "?", red: false, face: false, name: code, text: code };
  }
  return {
    code,
    short: rank.short,
    symbol: suit.symbol + TEXT_FORM,
    red: suit.red,
    face: rank.face,
    ace: code[0] === "A",
    name: `${rank.name} of ${suit.name}`,
    text: rank.short + suit.symbol + TEXT_FORM,
  };
}

// "7 of hearts", "ace of spades".
export function cardName(code) {
  return parseCard(code).name;
}

// "7♥" for messages.
export function cardText(code) {
  return parseCard(code).text;
}

// Pretty pile labels: "S ace" -> "♠ ace" (Four Corners' foundation rows).
export function prettyLabel(label) {
  const m = /^([SHDC]) (.*)$/.exec(label || "");
  return m ? `${SUITS[m[1]].symbol}${TEXT_FORM} ${m[2]}` : label || "";
}
