// Draws a variant's table from the layout hints of GET /v1/variants.
//
// A pile's layout {x, y, fan} places its first card in card slots (one slot is one card
// wide and one card high; the table is variant.table slots). A fanned pile spreads its
// cards in the fan's direction until it meets another pile; where it meets nothing the
// table grows to make room. Cards get a little smaller than their slot so that piles
// laid side by side (x = 0, 1, 2, ...) do not touch.

import { cardName, parseCard, prettyLabel } from "./cards.js";

export const RATIO = 1.4; // card height / card width
const FILL = 0.9; // card size / slot size
const FANS = {
  down: { dx: 0, dy: 1, axis: "v" },
  up: { dx: 0, dy: -1, axis: "v" },
  right: { dx: 1, dy: 0, axis: "h" },
  left: { dx: -1, dy: 0, axis: "h" },
};
// In slots along the fan's axis: the usual step between two cards of a fan, the least
// step that still shows a card's index where the fan may grow, and the room kept for a
// fan that meets nothing.
const STEP = { v: 0.25, h: 0.4 };
const MIN_STEP = { v: 0.2, h: 0.3 };
const OPEN_ROOM = { v: 1.2, h: 1.8 };
const GAP = 0.06;
const EPS = 0.05;
const MAX_SLOT_PX = 104;
const MIN_SLOT_PX = 46;
const PAD = 10;

const overlaps = (a1, a2, b1, b2) => a1 < b2 - EPS && b1 < a2 - EPS;

// The room (in slots) a fanned pile has in its fan's direction, and whether it is open.
function roomOf(spec, specs, table) {
  const fan = FANS[spec.layout.fan];
  if (!fan) return { room: 0, open: false };
  const { x, y } = spec.layout;
  let room = Infinity;
  for (const other of specs) {
    if (other === spec) continue;
    const ox = other.layout.x;
    const oy = other.layout.y;
    if (fan.dy > 0 && overlaps(ox, ox + 1, x, x + 1) && oy >= y + 1 - EPS) room = Math.min(room, oy - (y + 1));
    if (fan.dy < 0 && overlaps(ox, ox + 1, x, x + 1) && oy + 1 <= y + EPS) room = Math.min(room, y - (oy + 1));
    if (fan.dx > 0 && overlaps(oy, oy + 1, y, y + 1) && ox >= x + 1 - EPS) room = Math.min(room, ox - (x + 1));
    if (fan.dx < 0 && overlaps(oy, oy + 1, y, y + 1) && ox + 1 <= x + EPS) room = Math.min(room, x - (ox + 1));
  }
  if (room !== Infinity) return { room: Math.max(0, room - GAP), open: false };
  let edge;
  if (fan.dy > 0) edge = table.height - (y + 1);
  else if (fan.dy < 0) edge = y;
  else if (fan.dx > 0) edge = table.width - (x + 1);
  else edge = x;
  return { room: Math.max(edge, OPEN_ROOM[fan.axis]), open: true };
}

// Where every pile and card goes, in slots; the bounding box of it all.
export function planTable(variant, game) {
  const table = variant.table || { width: 8, height: 6 };
  const byId = new Map();
  if (game) for (const pile of game.piles) byId.set(pile.id, pile);
  const box = { minX: 0, minY: 0, maxX: table.width, maxY: table.height };
  const grow = (x1, y1, x2, y2) => {
    box.minX = Math.min(box.minX, x1);
    box.minY = Math.min(box.minY, y1);
    box.maxX = Math.max(box.maxX, x2);
    box.maxY = Math.max(box.maxY, y2);
  };
  const piles = variant.piles.map((spec) => {
    const pile = byId.get(spec.id) || { id: spec.id, kind: spec.kind, count: 0, cards: [] };
    const fan = FANS[spec.layout.fan];
    const { room, open } = roomOf(spec, variant.piles, table);
    const { x, y } = spec.layout;
    // The room a fan keeps, drawn or not, so that the table does not jump as piles grow.
    if (fan) grow(x + Math.min(0, fan.dx * room), y + Math.min(0, fan.dy * room),
      x + 1 + Math.max(0, fan.dx * room), y + 1 + Math.max(0, fan.dy * room));
    grow(x, y, x + 1, y + 1);
    const shown = fan ? pile.cards : pile.cards.slice(-1);
    let step = 0;
    if (fan && shown.length > 1) {
      const gaps = shown.length - 1;
      const natural = STEP[fan.axis];
      if (gaps * natural <= room) step = natural;
      else if (open && fan.axis === "v") step = Math.max(room / gaps, MIN_STEP.v);
      else step = room / gaps;
    }
    const cards = shown.map((code, i) => ({
      code,
      x: x + (fan ? fan.dx * i * step : 0),
      y: y + (fan ? fan.dy * i * step : 0),
    }));
    for (const c of cards) grow(c.x, c.y, c.x + 1, c.y + 1);
    return { spec, pile, fan, step, cards };
  });
  return { piles, box, table };
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function cardFace(node, code) {
  const c = parseCard(code);
  node.classList.add("card", "face", c.red ? "red" : "black");
  node.dataset.card = code;
  for (const corner of ["tl", "tr", "br"]) {
    const idx = el("span", `idx ${corner}`);
    idx.append(el("span", "r", c.short), el("span", "s", c.symbol));
    idx.setAttribute("aria-hidden", "true");
    node.append(idx);
  }
  const middle = el("span", c.face ? "pip court" : "pip", c.face ? c.short : c.symbol);
  middle.setAttribute("aria-hidden", "true");
  if (c.face) middle.append(el("span", "court-suit", c.symbol));
  node.append(middle);
  return node;
}

// The label written in an empty place; "Foundation 3" is "F3" where cards are small.
function slotLabel(label, cw) {
  const pretty = prettyLabel(label);
  const m = /^([A-Za-z])[a-z]+ (\d+)$/.exec(pretty);
  return m && cw < 64 ? `${m[1]}${m[2]}` : pretty;
}

const ROMAN = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

export class TableView {
  // handlers: onPile(pileId, event), onDrop(fromId, toId), onDragStart(pileId), canDrag(pileId)
  constructor(root, handlers) {
    this.root = root;
    this.handlers = handlers;
    this.drag = null;
    this.suppressClick = false;
    this.last = null;
    root.addEventListener("click", (event) => this.onClick(event));
    root.addEventListener("pointerdown", (event) => this.onPointerDown(event));
    this.resizeObserver = new ResizeObserver(() => {
      if (this.last && Math.abs(this.root.clientWidth - this.lastWidth) > 1) {
        this.render(...this.last);
      }
    });
    this.resizeObserver.observe(root);
  }

  onClick(event) {
    if (this.suppressClick) {
      this.suppressClick = false;
      return;
    }
    const target = event.target.closest("[data-pile]");
    if (!target || !this.root.contains(target)) return;
    this.handlers.onPile(target.dataset.pile, event);
  }

  // --- drag and drop (mouse, pen and touch alike) -------------------------------------
  onPointerDown(event) {
    if (event.button !== 0) return;
    const card = event.target.closest(".card.top[data-pile]");
    if (!card || !this.handlers.canDrag(card.dataset.pile)) return;
    const start = { x: event.clientX, y: event.clientY };
    const pileId = card.dataset.pile;
    const move = (e) => {
      if (!this.drag) {
        if (Math.hypot(e.clientX - start.x, e.clientY - start.y) < 6) return;
        const rect = card.getBoundingClientRect();
        const ghost = card.cloneNode(true);
        ghost.classList.add("ghost");
        ghost.removeAttribute("id");
        ghost.style.width = `${rect.width}px`;
        ghost.style.height = `${rect.height}px`;
        ghost.style.setProperty("--cw", `${rect.width}px`);
        ghost.style.setProperty("--ch", `${rect.height}px`);
        document.body.append(ghost);
        card.classList.add("dragging");
        this.drag = { pileId, ghost, dx: start.x - rect.left, dy: start.y - rect.top, card };
        this.handlers.onDragStart(pileId);
      }
      this.drag.ghost.style.left = `${e.clientX - this.drag.dx}px`;
      this.drag.ghost.style.top = `${e.clientY - this.drag.dy}px`;
      const over = this.pileAt(e.clientX, e.clientY);
      for (const node of this.root.querySelectorAll(".pile.drop-over")) node.classList.remove("drop-over");
      if (over && over !== pileId) {
        const pileNode = this.root.querySelector(`.pile[data-pile-id="${CSS.escape(over)}"]`);
        if (pileNode) pileNode.classList.add("drop-over");
      }
      e.preventDefault();
    };
    const up = (e) => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      window.removeEventListener("pointercancel", up);
      if (!this.drag) return;
      const { ghost } = this.drag;
      ghost.remove();
      this.drag.card.classList.remove("dragging");
      this.drag = null;
      this.suppressClick = true;
      setTimeout(() => { this.suppressClick = false; }, 0);
      const over = e.type === "pointerup" ? this.pileAt(e.clientX, e.clientY) : null;
      this.handlers.onDrop(pileId, over && over !== pileId ? over : null);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
    window.addEventListener("pointercancel", up);
  }

  pileAt(x, y) {
    const hit = document.elementFromPoint(x, y);
    const pile = hit && hit.closest(".pile[data-pile-id]");
    return pile && this.root.contains(pile) ? pile.dataset.pileId : null;
  }

  // --- drawing ------------------------------------------------------------------------
  // ui: {interactive, selected, targets:Set, hint:{from,to}, nextDeal, arrived:Set,
  //      maxHeight}
  render(variant, game, ui = {}) {
    this.last = [variant, game, ui];
    const root = this.root;
    this.lastWidth = root.clientWidth;
    const focused = root.contains(document.activeElement) ? document.activeElement : null;
    const focusPile = focused && focused.dataset ? focused.dataset.pile : null;

    const plan = planTable(variant, game);
    const { box } = plan;
    const width = box.maxX - box.minX;
    const reservedHeight = box.maxY - box.minY;
    const avail = Math.max(200, root.clientWidth - 2 * PAD);
    const maxHeight = ui.maxHeight || 700;
    const byHeight = (maxHeight - 2 * PAD) / (reservedHeight * RATIO);
    // slot: the width of a card slot in pixels (a slot is RATIO times as high).
    const fit = (stretch) => {
      const byWidth = avail / (width * stretch);
      return Math.min(byWidth, Math.max(Math.min(byHeight, MAX_SLOT_PX), MIN_SLOT_PX), MAX_SLOT_PX);
    };
    let slot = fit(1);
    // The Clock's ring is a circle in slots; drawn with square slots it is a round dial.
    // Where the width allows it (not on a phone), x is stretched to make slots square.
    let stretch = 1;
    if (variant.id === "clock" && fit(RATIO) >= slot * 0.98) {
      stretch = RATIO;
      slot = fit(RATIO);
    }
    const slotW = slot * stretch;
    const slotH = slot * RATIO;
    const cw = slot * FILL;
    const ch = slotH * FILL;
    const feltWidth = width * slotW + 2 * PAD;
    const feltHeight = (box.maxY - box.minY) * slotH + 2 * PAD;
    const px = (x) => PAD + (x - box.minX) * slotW + (slotW - cw) / 2;
    const py = (y) => PAD + (y - box.minY) * slotH + (slotH - ch) / 2;

    const felt = el("div", `felt variant-${variant.id}${cw < 50 ? " small" : ""}${ui.interactive ? " interactive" : ""}`);
    felt.style.width = `${feltWidth}px`;
    felt.style.height = `${feltHeight}px`;
    felt.style.setProperty("--cw", `${cw}px`);
    felt.style.setProperty("--ch", `${ch}px`);
    if (variant.id === "clock") felt.append(this.dial(plan, px, py, cw, ch));

    const interactive = Boolean(ui.interactive);
    const targets = ui.targets || new Set();
    const arrived = ui.arrived || new Set();
    const hint = ui.hint || {};
    for (const { spec, pile, fan, cards } of plan.piles) {
      const node = el("div", `pile kind-${spec.kind} fan-${spec.layout.fan || "none"}`);
      node.dataset.pileId = spec.id;
      node.dataset.count = String(pile.count);
      node.style.left = `${px(spec.layout.x)}px`;
      node.style.top = `${py(spec.layout.y)}px`;
      node.setAttribute("role", "group");
      const names = pile.cards.map(cardName);
      const summary = spec.kind === "stock"
        ? `${spec.id}: ${pile.count} card${pile.count === 1 ? "" : "s"} face down`
        : `${spec.id} (${spec.label}): ${pile.count ? `${pile.count} card${pile.count === 1 ? "" : "s"}, bottom to top ${names.join(", ")}` : "empty"}`;
      node.setAttribute("aria-label", summary);
      node.title = summary;
      if (ui.selected === spec.id) node.classList.add("selected");
      if (targets.has(spec.id)) node.classList.add("target");
      if (hint.from === spec.id) node.classList.add("hint-from");
      if (hint.to === spec.id) node.classList.add("hint-to");
      if (ui.nextDeal === spec.id) node.classList.add("next-deal");
      if (arrived.has(spec.id)) node.classList.add("arrived");

      // The place itself: labelled; a button (a destination) when the pile is empty.
      const empty = pile.count === 0;
      const slotNode = el(empty ? "button" : "div", "slot");
      if (empty) {
        slotNode.type = "button";
        slotNode.dataset.pile = spec.id;
        slotNode.setAttribute("aria-label", `empty ${spec.id}${spec.label ? ` (${spec.label})` : ""}`);
        if (!interactive) slotNode.setAttribute("aria-disabled", "true");
      }
      slotNode.append(el("span", "slot-label", spec.kind === "stock" ? "Stock" : slotLabel(spec.label, cw)));
      node.append(slotNode);

      if (spec.kind === "stock") {
        if (pile.count > 0) {
          const back = el("button", "card back top");
          back.type = "button";
          back.dataset.pile = spec.id;
          back.setAttribute("aria-label", `Stock, ${pile.count} card${pile.count === 1 ? "" : "s"} face down`);
          back.append(el("span", "stock-count", String(pile.count)));
          if (!interactive) back.setAttribute("aria-disabled", "true");
          node.append(back);
          if (pile.count > 1) node.classList.add("stacked");
        }
      } else {
        cards.forEach((card, i) => {
          const top = i === cards.length - 1;
          const node2 = el(top ? "button" : "div", top ? "top" : "under");
          cardFace(node2, card.code);
          node2.style.left = `${(card.x - spec.layout.x) * slotW}px`;
          node2.style.top = `${(card.y - spec.layout.y) * slotH}px`;
          node2.style.zIndex = String(i + 1);
          if (top) {
            node2.type = "button";
            node2.dataset.pile = spec.id;
            node2.setAttribute("aria-label", `${cardName(card.code)} on ${spec.id}`);
            if (ui.selected === spec.id) node2.setAttribute("aria-pressed", "true");
            if (!interactive) node2.setAttribute("aria-disabled", "true");
          } else {
            node2.setAttribute("aria-hidden", "true");
            node2.dataset.pileOf = spec.id;
          }
          node.append(node2);
        });
        if (!fan && pile.count > 1) {
          node.classList.add("stacked");
          const badge = el("span", "count-badge", String(pile.count));
          badge.setAttribute("aria-hidden", "true");
          node.append(badge);
        }
      }
      felt.append(node);
    }
    root.replaceChildren(felt);
    root.style.setProperty("--felt-width", `${feltWidth}px`);

    if (focusPile) {
      const again = root.querySelector(`[data-pile="${CSS.escape(focusPile)}"]`);
      if (again) again.focus({ preventScroll: true });
    }
  }

  // The Clock's face: a dial behind the ring of foundations, hours I..XII inside it.
  dial(plan, px, py, cw, ch) {
    const foundations = plan.piles.filter((p) => p.spec.kind === "foundation");
    const centers = foundations.map((p) => ({ x: px(p.spec.layout.x) + cw / 2, y: py(p.spec.layout.y) + ch / 2 }));
    const cx = centers.reduce((s, c) => s + c.x, 0) / centers.length;
    const cy = centers.reduce((s, c) => s + c.y, 0) / centers.length;
    const rx = Math.max(...centers.map((c) => Math.abs(c.x - cx)));
    const ry = Math.max(...centers.map((c) => Math.abs(c.y - cy)));
    const face = el("div", "dial");
    face.setAttribute("aria-hidden", "true");
    // Radii around the ring of foundation centres: the face reaches past the cards, the
    // inner line and the numerals stay inside them.
    const out = ch / 2 + 0.28 * cw;
    const fx = rx + out;
    const fy = ry + out;
    face.style.left = `${cx - fx}px`;
    face.style.top = `${cy - fy}px`;
    face.style.width = `${2 * fx}px`;
    face.style.height = `${2 * fy}px`;
    const inner = el("div", "dial-inner");
    const ix = rx - cw / 2 - 0.12 * cw;
    const iy = ry - ch / 2 - 0.12 * cw;
    inner.style.left = `${fx - ix}px`;
    inner.style.top = `${fy - iy}px`;
    inner.style.width = `${2 * ix}px`;
    inner.style.height = `${2 * iy}px`;
    face.append(inner);
    const nx = rx - cw / 2 - 0.55 * cw;
    const ny = ry - ch / 2 - 0.42 * cw;
    ROMAN.forEach((numeral, i) => {
      const angle = ((i + 1) / 12) * 2 * Math.PI;
      const n = el("span", "numeral", numeral);
      n.style.left = `${fx + Math.sin(angle) * nx}px`;
      n.style.top = `${fy - Math.cos(angle) * ny}px`;
      face.append(n);
    });
    for (const [cls, hours, length] of [["hand hour", 10, 0.55], ["hand minute", 2, 0.85]]) {
      const hand = el("span", cls);
      const angle = (hours / 12) * 2 * Math.PI;
      const len = length * Math.min(nx, ny);
      hand.style.left = `${fx}px`;
      hand.style.top = `${fy}px`;
      hand.style.height = `${len}px`;
      hand.style.transform = `rotate(${(angle * 180) / Math.PI + 180}deg)`;
      face.append(hand);
    }
    face.append(el("span", "boss"));
    return face;
  }
}
