/*
 * The flame-graph webview: draws a profile on a <canvas> and handles the interaction —
 * wheel zoom around the cursor, drag to pan, double-click to zoom to a frame, `0`/Escape to
 * reset, hover tooltip, substring search with dimming, click to open source, Left Heavy /
 * Time Order, the fiber filter and the sortable hot-function table. Geometry, colours, search
 * and numbers come from the shared pure modules; this file only scales and paints.
 *
 * It receives {type:'load'} from the extension and posts {type:'ready'} and
 * {type:'openSource', file, line}.
 */

import { frameColours, frameRanks } from '../colour';
import { formatMs, formatPercent, formatSamples, percentOf } from '../format';
import {
  ALL_FIBERS,
  countMatchingSamples,
  firstRectEndingAfter,
  hotFunctionsFromSamples,
  layoutView,
  matchFrames,
  rectAt,
  selectSamples,
  sortHotFunctions,
  type FiberSelection,
  type HotFunction,
  type HotSortKey,
  type Layout,
  type Rect,
  type Samples,
  type ViewKind,
} from '../layout';
import type { FlameDocument, ProfileSummary } from '../model';
import type { FromWebview, ToWebview } from '../protocol';

declare function acquireVsCodeApi(): { postMessage(message: FromWebview): void };

const ROW_HEIGHT = 18;
const TEXT_PADDING = 4;
const DIMMED_ALPHA = 0.18;
/** A click that moved more than this many pixels was a drag. */
const DRAG_THRESHOLD = 4;
const MAX_CANVAS_PIXELS = 32000;

const vscode = acquireVsCodeApi();

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
};

function cssVariable(name: string, fallback: string): string {
  const value = getComputedStyle(document.body).getPropertyValue(name).trim();
  return value || fallback;
}

/* ---------- model → layout ---------- */

function load(message: ToWebview): void {
  const profile = message.document;
  state.profile = profile;
  state.summary = message.summary;
  state.ranks = frameRanks(profile.frames);
  state.colours = frameColours(profile.frames, state.ranks);
  fiberSelect.replaceChildren();
  fiberSelect.append(new Option('All fibers', String(ALL_FIBERS)));
  profile.profiles.forEach((fiberProfile, index) => fiberSelect.append(new Option(fiberProfile.name, String(index))));
  state.fiber = ALL_FIBERS;
  fiberSelect.value = String(state.fiber);
  document.title = message.title;
  relayout();
  renderHotTable();
}

function relayout(): void {
  if (!state.profile) return;
  state.samples = selectSamples(state.profile, state.fiber);
  state.layout = layoutView(state.samples, state.view, state.ranks);
  resetZoom();
  updateSearch();
  const layout = state.layout;
  status.textContent = `${formatSamples(layout.totalSamples)} · ${formatMs(layout.totalWeight)}`;
  leftHeavyButton.setAttribute('aria-pressed', String(state.view === 'left-heavy'));
  timeOrderButton.setAttribute('aria-pressed', String(state.view === 'time-order'));
  if (!state.summary) renderHotTable();
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
  context.font = `12px ${cssVariable('--osprey-font', 'sans-serif')}`;
  context.textBaseline = 'middle';
  // Rows are sorted and non-overlapping: start each at the first rect reaching the view.
  for (const row of layout.byDepth) {
    for (let index = firstRectEndingAfter(row, state.viewStart); index < row.length; index++) {
      const rect = row[index];
      const x = (rect.start - state.viewStart) * scale;
      if (x > width) break;
      const w = rect.width * scale;
      if (w < 0.5) continue;
      paintRect(context, profile, rect, x, w, width);
    }
  }
  context.globalAlpha = 1;
}

function paintRect(
  context: CanvasRenderingContext2D,
  profile: FlameDocument,
  rect: Rect,
  x: number,
  w: number,
  width: number,
): void {
  const y = rect.depth * ROW_HEIGHT;
  const dimmed = state.matches !== undefined && state.matches[rect.frame] !== 1;
  context.globalAlpha = dimmed ? DIMMED_ALPHA : 1;
  context.fillStyle = state.colours[rect.frame];
  const left = Math.max(x, 0);
  const right = Math.min(x + w, width);
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
  const total = document.createElement('div');
  total.textContent = `Total: ${formatMs(rect.width)} (${formatPercent(percentOf(rect.width, layout.totalWeight))})`;
  const self = document.createElement('div');
  self.textContent = `Self: ${formatMs(rect.self)} (${formatPercent(percentOf(rect.self, layout.totalWeight))})`;
  const samples = document.createElement('div');
  samples.textContent = `${formatSamples(rect.samples)} (${formatSamples(rect.selfSamples)} self)`;
  tooltip.replaceChildren(name, location, total, self, samples);
  tooltip.style.display = 'block';
  const margin = 12;
  const box = tooltip.getBoundingClientRect();
  const left = clientX + margin + box.width > window.innerWidth ? clientX - margin - box.width : clientX + margin;
  const top = clientY + margin + box.height > window.innerHeight ? clientY - margin - box.height : clientY + margin;
  tooltip.style.left = `${Math.max(0, left)}px`;
  tooltip.style.top = `${Math.max(0, top)}px`;
}

function hideTooltip(): void {
  tooltip.style.display = 'none';
}

function openSource(file: string, line: number): void {
  if (file) vscode.postMessage({ type: 'openSource', file, line: line >= 1 ? line : 1 });
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
  canvas.style.cursor = rect && state.profile?.frames[rect.frame].file ? 'pointer' : 'default';
});

window.addEventListener('mouseup', (event) => {
  const wasDrag = drag?.moved ?? true;
  drag = undefined;
  canvas.style.cursor = 'default';
  if (wasDrag || event.target !== canvas) return;
  const rect = rectUnder(event.clientX, event.clientY);
  if (!rect || !state.profile) return;
  const frame = state.profile.frames[rect.frame];
  if (frame.file) openSource(frame.file, frame.line ?? 1);
});

canvas.addEventListener('mouseleave', hideTooltip);

canvas.addEventListener('dblclick', (event) => {
  const rect = rectUnder(event.clientX, event.clientY);
  if (!rect) return;
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
  if (event.key === '0' || event.key === 'Escape') {
    resetZoom();
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

/* ---------- search ---------- */

function updateSearch(): void {
  if (!state.profile || !state.samples) return;
  state.matches = matchFrames(state.profile.frames, searchInput.value);
  if (state.matches) {
    const matched = countMatchingSamples(state.samples, state.matches);
    const percent = percentOf(matched, state.samples.stacks.length);
    matchSummary.textContent = `${formatPercent(percent)} of samples match`;
  } else {
    matchSummary.textContent = '';
  }
  draw();
}

searchInput.addEventListener('input', updateSearch);

/* ---------- hot table ---------- */

function hotRows(): { rows: HotFunction[]; caption: string } {
  if (state.summary) {
    return {
      rows: state.summary.functions.map((fn) => ({
        name: fn.name,
        file: fn.file,
        line: fn.line,
        self: fn.self,
        total: fn.total,
        selfPercent: fn.self_pct,
        totalPercent: fn.total_pct,
      })),
      caption: `Hot functions — on-CPU samples, all fibers (${formatSamples(state.summary.totals.on_cpu)})`,
    };
  }
  if (!state.profile || !state.samples) return { rows: [], caption: 'Hot functions' };
  return {
    rows: hotFunctionsFromSamples(state.profile.frames, state.samples),
    caption: `Hot functions — all samples of this selection (${formatSamples(state.samples.stacks.length)})`,
  };
}

function renderHotTable(): void {
  const { rows, caption } = hotRows();
  hotCaption.textContent = caption;
  sortSelf.setAttribute('aria-sort', state.hotSort === 'self' ? 'descending' : 'none');
  sortTotal.setAttribute('aria-sort', state.hotSort === 'total' ? 'descending' : 'none');
  const body: HTMLTableRowElement[] = [];
  for (const row of sortHotFunctions(rows, state.hotSort)) {
    const tr = document.createElement('tr');
    // [text, hover title]: percentages in the cells, sample counts and full paths on hover.
    const cells: [string, string][] = [
      [row.name, row.name],
      [formatPercent(row.selfPercent), formatSamples(row.self)],
      [formatPercent(row.totalPercent), formatSamples(row.total)],
      [row.file ? `${row.file.split('/').pop()}:${row.line}` : '', row.file ? `${row.file}:${row.line}` : ''],
    ];
    cells.forEach(([text, title], index) => {
      const td = document.createElement('td');
      td.textContent = text;
      td.title = title;
      if (index === 3) td.className = 'location';
      tr.append(td);
    });
    tr.dataset.file = row.file;
    tr.dataset.line = String(row.line);
    if (row.file) {
      tr.tabIndex = 0;
      tr.addEventListener('click', () => openSource(row.file, row.line));
      tr.addEventListener('keydown', (event) => {
        if (event.key === 'Enter') openSource(row.file, row.line);
      });
    }
    body.push(tr);
  }
  hotBody.replaceChildren(...body);
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
window.addEventListener('message', (event: MessageEvent) => {
  const message = event.data as ToWebview;
  if (message && message.type === 'load') load(message);
});
vscode.postMessage({ type: 'ready' });
