/*
 * The flame-graph renderer, one for both hosts (the VS Code webview and the offline HTML page
 * `osprey` writes; see host.ts): draws a profile on a <canvas> and handles the interaction —
 * a click selects a frame, a double click zooms to it, Enter (or a click on the location in
 * the details line or the table) opens its source, the wheel zooms around the cursor, a drag
 * pans, `0`/Escape reset; hover tooltip, search with dimming (a match is never narrower than
 * two pixels), Left Heavy / Time Order, the fiber filter, waiting time on demand and the
 * sortable hot-function table. Every number comes from layout.ts over the selected samples,
 * so the table, tooltip, search share and status line agree with each other and with the
 * terminal report; this file only scales and paints.
 */

import { frameColours, frameRanks, isWaitingFrame } from '../colour';
import { formatMs, formatPercent, formatSamples, percentOf } from '../format';
import {
  ALL_FIBERS,
  firstRectEndingAfter,
  hotFunctions,
  layoutView,
  matchFrames,
  matchingOnCpuWeight,
  periodMs,
  rectAt,
  selectSamples,
  sortHotFunctions,
  toSamples,
  type FiberSelection,
  type HotSortKey,
  type Layout,
  type Rect,
  type Samples,
  type ViewKind,
} from '../layout';
import type { FlameDocument, ProfileSummary } from '../model';
import type { ToWebview } from '../protocol';
import { detectHost } from './host';

const ROW_HEIGHT = 18;
const TEXT_PADDING = 4;
const DIMMED_ALPHA = 0.18;
/** A click that moved more than this many pixels was a drag. */
const DRAG_THRESHOLD = 4;
const MAX_CANVAS_PIXELS = 32000;
/** A search match is drawn at least this wide, however small its share. */
const MIN_MATCH_WIDTH = 2;

const host = detectHost();

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`missing #${id}`);
  return found as T;
}

const canvas = element<HTMLCanvasElement>('canvas');
const flame = element<HTMLDivElement>('flame');
const tooltip = element<HTMLDivElement>('tooltip');
const fiberSelect = element<HTMLSelectElement>('fiber');
const searchInput = element<HTMLInputElement>('search');
const matchSummary = element<HTMLSpanElement>('match-summary');
const status = element<HTMLSpanElement>('status');
const leftHeavyButton = element<HTMLButtonElement>('view-left-heavy');
const timeOrderButton = element<HTMLButtonElement>('view-time-order');
const hotBody = element<HTMLTableSectionElement>('hot-body');
const hotCaption = element<HTMLTableCaptionElement>('hot-caption');
const sortSelf = element<HTMLTableCellElement>('sort-self');
const sortTotal = element<HTMLTableCellElement>('sort-total');
const waitingButton = element<HTMLButtonElement>('show-waiting');
const profileAgainButton = element<HTMLButtonElement>('profile-again');
const details = element<HTMLDivElement>('details');

interface State {
  profile?: FlameDocument;
  summary?: ProfileSummary;
  colours: string[];
  ranks: Int32Array;
  view: ViewKind;
  fiber: FiberSelection;
  samples?: Samples;
  layout?: Layout;
  matches?: Uint8Array;
  /** Milliseconds of one sampling period (to show sample counts). */
  period: number;
  includeWaiting: boolean;
  /** The selected frame (click), drawn outlined; its source opens on Enter. */
  selected?: Rect;
  /** Visible x range in milliseconds. */
  viewStart: number;
  viewEnd: number;
  hotSort: HotSortKey;
}

const state: State = {
  colours: [],
  ranks: new Int32Array(0),
  view: 'left-heavy',
  fiber: ALL_FIBERS,
  viewStart: 0,
  viewEnd: 1,
  hotSort: 'self',
  period: 1,
  includeWaiting: false,
};

/* A theme colour as the canvas needs it: resolved through a probe element, so var() fallbacks
 * and any colour syntax come back as rgb(). */
const colourProbe = document.createElement('span');
colourProbe.style.display = 'none';
document.body.append(colourProbe);
function cssVariable(name: string, fallback: string): string {
  colourProbe.style.color = fallback;
  colourProbe.style.color = `var(${name})`;
  return getComputedStyle(colourProbe).color || fallback;
}

function cssFont(): string {
  return getComputedStyle(document.body).fontFamily || 'sans-serif';
}

/* ---------- model → layout ---------- */

function load(message: ToWebview): void {
  const profile = message.document;
  state.profile = profile;
  state.summary = message.summary;
  state.ranks = frameRanks(profile.frames);
  state.colours = frameColours(profile.frames);
  state.period = message.summary && message.summary.totals.rate_hz > 0 ? 1000 / message.summary.totals.rate_hz : periodMs(profile);
  fiberSelect.replaceChildren();
  fiberSelect.append(new Option('All fibers', String(ALL_FIBERS)));
  profile.profiles.forEach((fiberProfile, index) => fiberSelect.append(new Option(fiberProfile.name, String(index))));
  state.fiber = ALL_FIBERS;
  fiberSelect.value = String(state.fiber);
  document.title = message.title;
  profileAgainButton.hidden = !(host.editor && message.source);
  if (message.restorePath) host.setState({ restorePath: message.restorePath, source: message.source });
  relayout();
}

function relayout(): void {
  if (!state.profile) return;
  state.samples = selectSamples(state.profile, state.fiber, { includeWaiting: state.includeWaiting });
  state.layout = layoutView(state.samples, state.view, state.ranks);
  select(undefined);
  resetZoom();
  updateSearch();
  const samples = state.samples;
  const onCpu = `${formatSamples(toSamples(samples.onCpuWeight, state.period))} on-CPU · ${formatMs(samples.onCpuWeight)}`;
  status.textContent = state.includeWaiting ? `${onCpu} · ${formatMs(samples.waitingWeight)} waiting` : onCpu;
  leftHeavyButton.setAttribute('aria-pressed', String(state.view === 'left-heavy'));
  timeOrderButton.setAttribute('aria-pressed', String(state.view === 'time-order'));
  waitingButton.setAttribute('aria-pressed', String(state.includeWaiting));
  renderHotTable();
}

function resetZoom(): void {
  state.viewStart = 0;
  state.viewEnd = Math.max(state.layout?.totalWeight ?? 1, 1e-9);
  draw();
}

/* ---------- drawing ---------- */

function resizeCanvas(): { width: number; height: number } {
  const depth = state.layout ? state.layout.byDepth.length : 0;
  const width = flame.clientWidth;
  const ratio = window.devicePixelRatio || 1;
  // Browsers refuse canvases much taller than 32k device pixels; stacks deeper than that
  // (thousands of frames of recursion) are cut off at the bottom.
  const height = Math.min(Math.max(flame.clientHeight, depth * ROW_HEIGHT + ROW_HEIGHT), MAX_CANVAS_PIXELS / ratio);
  if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  return { width, height };
}

function draw(): void {
  const { width, height } = resizeCanvas();
  const context = canvas.getContext('2d');
  if (!context) return;
  const ratio = window.devicePixelRatio || 1;
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  context.fillStyle = cssVariable('--osprey-bg', '#1e1e1e');
  context.fillRect(0, 0, width, height);
  const layout = state.layout;
  const profile = state.profile;
  if (!layout || !profile) return;
  const scale = width / (state.viewEnd - state.viewStart);
  context.font = `12px ${cssFont()}`;
  context.textBaseline = 'middle';
  const matchColour = state.matches ? cssVariable('--osprey-match', '#1e90ff') : '';
  // Rows are sorted and non-overlapping: start each at the first rect reaching the view.
  for (const row of layout.byDepth) {
    for (let index = firstRectEndingAfter(row, state.viewStart); index < row.length; index++) {
      const rect = row[index];
      const x = (rect.start - state.viewStart) * scale;
      if (x > width) break;
      let w = rect.width * scale;
      const matched = state.matches !== undefined && state.matches[rect.frame] === 1;
      if (matched && w < MIN_MATCH_WIDTH) w = MIN_MATCH_WIDTH;
      else if (w < 0.5) continue;
      paintRect(context, profile, rect, x, w, width, matched ? matchColour : undefined);
    }
  }
  context.globalAlpha = 1;
  const selected = state.selected;
  if (selected) {
    const x = (selected.start - state.viewStart) * scale;
    const w = Math.max(selected.width * scale, MIN_MATCH_WIDTH);
    context.strokeStyle = cssVariable('--osprey-selection', '#007fd4');
    context.lineWidth = 2;
    context.strokeRect(Math.max(x, 0) + 1, selected.depth * ROW_HEIGHT + 1, Math.min(w, width) - 2, ROW_HEIGHT - 3);
  }
}

function paintRect(
  context: CanvasRenderingContext2D,
  profile: FlameDocument,
  rect: Rect,
  x: number,
  w: number,
  width: number,
  /** The match colour when this frame matches the search. */
  matchColour: string | undefined,
): void {
  const y = rect.depth * ROW_HEIGHT;
  const matched = matchColour !== undefined;
  const dimmed = state.matches !== undefined && !matched;
  context.globalAlpha = dimmed ? DIMMED_ALPHA : 1;
  // A match too narrow to read is drawn in the match colour so it cannot be missed.
  context.fillStyle = matched && w < 6 ? matchColour : state.colours[rect.frame];
  const left = Math.max(x, 0);
  const right = Math.min(x + w, width);
  if (matched && w < 6) {
    // Whole pixels, kept inside the canvas: a sliver at the right edge still shows.
    const narrow = Math.max(Math.round(right - left), MIN_MATCH_WIDTH);
    context.fillRect(Math.min(Math.round(left), width - narrow), y, narrow, ROW_HEIGHT - 1);
    return;
  }
  context.fillRect(left, y, Math.max(right - left - 1, 0.5), ROW_HEIGHT - 1);
  if (right - left > 24) {
    context.fillStyle = '#1b1b1b';
    const label = fitText(context, profile.frames[rect.frame].name, right - left - 2 * TEXT_PADDING);
    if (label) context.fillText(label, left + TEXT_PADDING, y + ROW_HEIGHT / 2);
  }
}

function fitText(context: CanvasRenderingContext2D, text: string, room: number): string {
  if (context.measureText(text).width <= room) return text;
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (context.measureText(text.slice(0, middle) + '…').width <= room) low = middle;
    else high = middle - 1;
  }
  return low > 0 ? text.slice(0, low) + '…' : '';
}

/* ---------- hit testing and interaction ---------- */

function rectUnder(clientX: number, clientY: number): Rect | undefined {
  if (!state.layout) return undefined;
  const bounds = canvas.getBoundingClientRect();
  const x = clientX - bounds.left;
  const y = clientY - bounds.top;
  if (x < 0 || y < 0 || x > bounds.width) return undefined;
  const depth = Math.floor(y / ROW_HEIGHT);
  const ms = state.viewStart + (x / bounds.width) * (state.viewEnd - state.viewStart);
  return rectAt(state.layout, depth, ms);
}

function showTooltip(rect: Rect, clientX: number, clientY: number): void {
  const profile = state.profile!;
  const layout = state.layout!;
  const frame = profile.frames[rect.frame];
  const where = frame.file ? `${frame.file}${frame.line ? `:${frame.line}` : ''}` : '(no source)';
  const name = document.createElement('div');
  name.className = 'name';
  name.textContent = frame.name;
  const location = document.createElement('div');
  location.className = 'location';
  location.textContent = where;
  const lines = describeRect(rect, layout).map((text) => {
    const line = document.createElement('div');
    line.textContent = text;
    return line;
  });
  tooltip.replaceChildren(name, location, ...lines);
  tooltip.style.display = 'block';
  const margin = 12;
  const box = tooltip.getBoundingClientRect();
  const left = clientX + margin + box.width > window.innerWidth ? clientX - margin - box.width : clientX + margin;
  const top = clientY + margin + box.height > window.innerHeight ? clientY - margin - box.height : clientY + margin;
  tooltip.style.left = `${Math.max(0, left)}px`;
  tooltip.style.top = `${Math.max(0, top)}px`;
}

/* The numbers of one rectangle: on-CPU shares of the view, waiting time apart. */
function describeRect(rect: Rect, layout: Layout): string[] {
  const frame = state.profile!.frames[rect.frame];
  const samples = formatSamples(toSamples(rect.width, state.period));
  if (isWaitingFrame(frame)) return [`Waiting: ${formatMs(rect.width)} (${samples}), not CPU time`];
  const onCpu = rect.width - rect.waiting;
  const lines = [
    `On-CPU total: ${formatMs(onCpu)} (${formatPercent(percentOf(onCpu, layout.onCpuWeight))})`,
    `On-CPU self: ${formatMs(rect.self)} (${formatPercent(percentOf(rect.self, layout.onCpuWeight))})`,
  ];
  if (rect.waiting > 0) lines.push(`Waiting below it: ${formatMs(rect.waiting)}`);
  lines.push(samples);
  return lines;
}

function hideTooltip(): void {
  tooltip.style.display = 'none';
}

function openSource(file: string, line: number): void {
  if (file && host.editor) host.post({ type: 'openSource', file, line: line >= 1 ? line : 1 });
}

function locationText(file: string, line: number | undefined): string {
  return `${file.split('/').pop()}${line ? `:${line}` : ''}`;
}

/* A link-like element that opens a source location (in the editor; the page shows the path). */
function locationLink(file: string, line: number | undefined): HTMLElement {
  const link = document.createElement(host.editor ? 'a' : 'span');
  link.className = 'location';
  link.textContent = locationText(file, line);
  link.title = `${file}${line ? `:${line}` : ''}${host.editor ? ' — open the source' : ''}`;
  if (link instanceof HTMLAnchorElement) {
    link.href = '#';
    link.addEventListener('click', (event) => {
      event.preventDefault();
      event.stopPropagation();
      openSource(file, line ?? 1);
    });
  }
  return link;
}

/* Selects a frame (or nothing): outlined in the graph, described in the details line. */
function select(rect: Rect | undefined): void {
  state.selected = rect;
  if (!rect || !state.profile || !state.layout) {
    details.className = 'hint';
    details.textContent = host.editor
      ? 'Click a frame to select it, double-click to zoom; Enter or its location opens the source.'
      : 'Click a frame to select it, double-click to zoom; 0 or Escape resets.';
    return;
  }
  details.className = '';
  const frame = state.profile.frames[rect.frame];
  const name = document.createElement('span');
  name.className = 'name';
  name.textContent = frame.name;
  const numbers = document.createElement('span');
  numbers.textContent = describeRect(rect, state.layout).slice(0, 2).join(' · ');
  const parts: HTMLElement[] = [name];
  if (frame.file) parts.push(locationLink(frame.file, frame.line));
  parts.push(numbers);
  details.replaceChildren(...parts);
}

function clampView(start: number, span: number): void {
  const total = Math.max(state.layout?.totalWeight ?? 1, 1e-9);
  const minimumSpan = total / 1e6;
  span = Math.min(Math.max(span, minimumSpan), total);
  start = Math.min(Math.max(start, 0), total - span);
  state.viewStart = start;
  state.viewEnd = start + span;
}

canvas.addEventListener(
  'wheel',
  (event) => {
    if (!state.layout) return;
    event.preventDefault();
    const bounds = canvas.getBoundingClientRect();
    const span = state.viewEnd - state.viewStart;
    if (Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
      clampView(state.viewStart + (event.deltaX / bounds.width) * span, span);
    } else {
      const fraction = (event.clientX - bounds.left) / bounds.width;
      const cursor = state.viewStart + fraction * span;
      const newSpan = span * Math.exp(event.deltaY * 0.002);
      clampView(cursor - fraction * newSpan, newSpan);
    }
    hideTooltip();
    draw();
  },
  { passive: false },
);

let drag: { x: number; y: number; viewStart: number; scrollTop: number; moved: boolean } | undefined;

canvas.addEventListener('mousedown', (event) => {
  if (event.button !== 0) return;
  drag = { x: event.clientX, y: event.clientY, viewStart: state.viewStart, scrollTop: flame.scrollTop, moved: false };
});

window.addEventListener('mousemove', (event) => {
  if (drag) {
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > DRAG_THRESHOLD) drag.moved = true;
    if (drag.moved) {
      const span = state.viewEnd - state.viewStart;
      clampView(drag.viewStart - (dx / canvas.getBoundingClientRect().width) * span, span);
      flame.scrollTop = drag.scrollTop - dy;
      canvas.style.cursor = 'grabbing';
      hideTooltip();
      draw();
      return;
    }
  }
  if (event.target !== canvas) return;
  const rect = rectUnder(event.clientX, event.clientY);
  if (rect) showTooltip(rect, event.clientX, event.clientY);
  else hideTooltip();
  canvas.style.cursor = rect ? 'pointer' : 'default';
});

window.addEventListener('mouseup', (event) => {
  const wasDrag = drag?.moved ?? true;
  drag = undefined;
  canvas.style.cursor = 'default';
  if (wasDrag || event.target !== canvas) return;
  canvas.focus();
  select(rectUnder(event.clientX, event.clientY));
  draw();
});

canvas.addEventListener('mouseleave', hideTooltip);

canvas.addEventListener('dblclick', (event) => {
  const rect = rectUnder(event.clientX, event.clientY);
  if (!rect) return;
  select(rect);
  clampView(rect.start, rect.width);
  draw();
});

document.addEventListener('keydown', (event) => {
  if (event.target === searchInput) {
    if (event.key === 'Escape') {
      searchInput.value = '';
      updateSearch();
      searchInput.blur();
    }
    return;
  }
  if (event.target instanceof HTMLElement && event.target.closest('#hot')) return;
  if (event.key === '0' || event.key === 'Escape') {
    if (event.key === 'Escape') select(undefined);
    resetZoom();
    event.preventDefault();
  } else if (event.key === 'Enter' && state.selected && state.profile) {
    const frame = state.profile.frames[state.selected.frame];
    if (frame.file) openSource(frame.file, frame.line ?? 1);
    event.preventDefault();
  }
});

element<HTMLButtonElement>('reset').addEventListener('click', resetZoom);

leftHeavyButton.addEventListener('click', () => {
  state.view = 'left-heavy';
  relayout();
});
timeOrderButton.addEventListener('click', () => {
  state.view = 'time-order';
  relayout();
});
fiberSelect.addEventListener('change', () => {
  state.fiber = Number(fiberSelect.value);
  relayout();
});
waitingButton.addEventListener('click', () => {
  state.includeWaiting = !state.includeWaiting;
  relayout();
});
profileAgainButton.addEventListener('click', () => host.post({ type: 'profileAgain' }));

/* ---------- search ---------- */

function updateSearch(): void {
  if (!state.profile || !state.samples) return;
  state.matches = matchFrames(state.profile.frames, searchInput.value);
  if (state.matches) {
    const matched = matchingOnCpuWeight(state.samples, state.matches);
    const percent = percentOf(matched, state.samples.onCpuWeight);
    matchSummary.textContent = `${formatPercent(percent)} of on-CPU time matches`;
  } else {
    matchSummary.textContent = '';
  }
  draw();
}

searchInput.addEventListener('input', updateSearch);

/* ---------- hot table ---------- */

function renderHotTable(): void {
  if (!state.profile || !state.samples) return;
  const samples = state.samples;
  const fiber = state.fiber === ALL_FIBERS ? 'all fibers' : state.profile.profiles[state.fiber].name;
  hotCaption.textContent = `Hot functions — on-CPU, ${fiber} (${formatSamples(toSamples(samples.onCpuWeight, state.period))})`;
  sortSelf.setAttribute('aria-sort', state.hotSort === 'self' ? 'descending' : 'none');
  sortTotal.setAttribute('aria-sort', state.hotSort === 'total' ? 'descending' : 'none');
  const body: HTMLTableRowElement[] = [];
  const rows = sortHotFunctions(hotFunctions(state.profile.frames, samples), state.hotSort);
  for (const row of rows) {
    const tr = document.createElement('tr');
    const name = document.createElement('td');
    name.textContent = row.name;
    name.title = row.name;
    const self = document.createElement('td');
    self.textContent = formatPercent(row.selfPercent);
    self.title = `${formatSamples(toSamples(row.self, state.period))} · ${formatMs(row.self)}`;
    const total = document.createElement('td');
    total.textContent = formatPercent(row.totalPercent);
    total.title = `${formatSamples(toSamples(row.total, state.period))} · ${formatMs(row.total)}`;
    self.className = total.className = 'number';
    const location = document.createElement('td');
    location.className = 'location-cell';
    if (row.file) location.append(locationLink(row.file, row.line || undefined));
    tr.append(name, self, total, location);
    tr.dataset.file = row.file;
    tr.dataset.line = String(row.line);
    tr.dataset.name = row.name;
    tr.tabIndex = 0;
    tr.addEventListener('click', () => selectRow(tr));
    tr.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && row.file) openSource(row.file, row.line);
      else if (event.key === 'ArrowDown' && tr.nextElementSibling) (tr.nextElementSibling as HTMLElement).focus();
      else if (event.key === 'ArrowUp' && tr.previousElementSibling) (tr.previousElementSibling as HTMLElement).focus();
      else return;
      event.preventDefault();
    });
    body.push(tr);
  }
  hotBody.replaceChildren(...body);
}

/* A click on a row selects it and, in the graph, the function's widest rectangle. */
function selectRow(tr: HTMLTableRowElement): void {
  hotBody.querySelectorAll('tr[aria-selected="true"]').forEach((other) => other.removeAttribute('aria-selected'));
  tr.setAttribute('aria-selected', 'true');
  tr.focus();
  const frameIndex = state.profile?.frames.findIndex((frame) => frame.name === tr.dataset.name && (frame.file ?? '') === tr.dataset.file) ?? -1;
  const widest = state.layout?.rects.filter((rect) => rect.frame === frameIndex).reduce<Rect | undefined>((a, b) => (a && a.width >= b.width ? a : b), undefined);
  select(widest);
  draw();
}

sortSelf.addEventListener('click', () => {
  state.hotSort = 'self';
  renderHotTable();
});
sortTotal.addEventListener('click', () => {
  state.hotSort = 'total';
  renderHotTable();
});

/* ---------- wiring ---------- */

window.addEventListener('resize', () => draw());
// VS Code switches themes by rewriting the CSS variables on <html> and the classes on <body>.
const themeObserver = new MutationObserver(() => draw());
themeObserver.observe(document.documentElement, { attributes: true, attributeFilter: ['style', 'class'] });
themeObserver.observe(document.body, { attributes: true, attributeFilter: ['class'] });
host.start(load, (problem) => {
  status.textContent = `Osprey: ${problem}`;
});
