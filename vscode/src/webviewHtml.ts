/*
 * The flame graph's HTML, for both hosts: the VS Code webview (a strict content-security
 * policy: only the one nonced script runs, styles are the one nonced <style> block; the script
 * sets individual style properties through the CSSOM, which the policy allows) and the offline
 * page template `osprey` fills in (built from these sources by `exporters/viewer-page.py`
 * with the C build: the same markup, styles and bundled script inline, the profile at the @OSPREY_DATA@ marker, no network at all).
 * Colours are VS Code's theme variables, including the extension's contributed ThemeColors
 * (`osprey.*`, defined for light, dark and both High Contrast themes in package.json), with
 * dark fallbacks so the page renders outside the editor too.
 */

import { randomBytes } from 'crypto';

export interface WebviewHtmlOptions {
  /** webview.cspSource (the origin webview resources are served from). */
  cspSource: string;
  /** A fresh random nonce for this rendering. */
  nonce: string;
  /** URI of the bundled flame-graph script, as the webview must load it. */
  scriptUri: string;
  title?: string;
}

/* 128 bits of randomness, base64 without padding characters that need escaping. */
export function makeNonce(): string {
  return randomBytes(16).toString('base64').replace(/[^A-Za-z0-9]/g, '');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function contentSecurityPolicy(options: WebviewHtmlOptions): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${options.nonce}'`,
    `style-src ${options.cspSource} 'nonce-${options.nonce}'`,
    `img-src ${options.cspSource} data:`,
    `font-src ${options.cspSource}`,
  ].join('; ');
}

/* Layout and colours. Below 900 px (the editor's side-by-side width) the hot table sits under
 * the graph at full width; its number columns have a fixed width that fits "100.0%". */
const STYLE = `
  :root {
    --osprey-bg: var(--vscode-editor-background, #1e1e1e);
    --osprey-fg: var(--vscode-editor-foreground, #d4d4d4);
    --osprey-muted: var(--vscode-descriptionForeground, #9d9d9d);
    --osprey-border: var(--vscode-panel-border, #3c3c3c);
    --osprey-contrast-border: var(--vscode-contrastBorder, transparent);
    --osprey-input-bg: var(--vscode-input-background, #3c3c3c);
    --osprey-input-fg: var(--vscode-input-foreground, #cccccc);
    --osprey-input-border: var(--vscode-input-border, #3c3c3c);
    --osprey-button-bg: var(--vscode-osprey-toggleBackground, #3a3d41);
    --osprey-button-fg: var(--vscode-osprey-toggleForeground, #ffffff);
    --osprey-active-bg: var(--vscode-osprey-toggleActiveBackground, #0e639c);
    --osprey-active-fg: var(--vscode-osprey-toggleActiveForeground, #ffffff);
    --osprey-hover-bg: var(--vscode-list-hoverBackground, #2a2d2e);
    --osprey-row-selected-bg: var(--vscode-list-inactiveSelectionBackground, #37373d);
    --osprey-link: var(--vscode-textLink-foreground, #3794ff);
    --osprey-focus: var(--vscode-focusBorder, #007fd4);
    --osprey-selection: var(--vscode-osprey-selectionBorder, #007fd4);
    --osprey-match: var(--vscode-osprey-searchMatch, #1e90ff);
    --osprey-tooltip-bg: var(--vscode-editorHoverWidget-background, #252526);
    --osprey-tooltip-fg: var(--vscode-editorHoverWidget-foreground, #cccccc);
    --osprey-tooltip-border: var(--vscode-editorHoverWidget-border, #454545);
    --osprey-font: var(--vscode-font-family, system-ui, sans-serif);
    --osprey-font-size: var(--vscode-font-size, 13px);
    --osprey-mono: var(--vscode-editor-font-family, monospace);
  }
  html, body { margin: 0; padding: 0; height: 100%; overflow: hidden; }
  body { background: var(--osprey-bg); color: var(--osprey-fg); font-family: var(--osprey-font);
         font-size: var(--osprey-font-size); display: flex; flex-direction: column; }
  #toolbar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; padding: 6px 8px;
             border-bottom: 1px solid var(--osprey-border); }
  #toolbar button, #toolbar select, #toolbar input {
    font: inherit; color: var(--osprey-input-fg); background: var(--osprey-input-bg);
    border: 1px solid var(--osprey-input-border); padding: 2px 6px; }
  #toolbar button { background: var(--osprey-button-bg); color: var(--osprey-button-fg); cursor: pointer;
                    border-color: var(--osprey-contrast-border); }
  #toolbar button[aria-pressed="true"] { background: var(--osprey-active-bg); color: var(--osprey-active-fg); }
  #toolbar button:focus-visible, #toolbar select:focus-visible, #toolbar input:focus-visible,
  canvas:focus-visible, #hot tbody tr:focus-visible { outline: 1px solid var(--osprey-focus); outline-offset: -1px; }
  #search { width: 12em; }
  #match-summary, #status { color: var(--osprey-muted); }
  #details { padding: 3px 8px; border-bottom: 1px solid var(--osprey-border); display: flex; gap: 12px;
             flex-wrap: wrap; align-items: baseline; }
  #details { min-height: 1.4em; white-space: nowrap; overflow: hidden; }
  #details.hint { color: var(--osprey-muted); }
  #details .name { font-weight: bold; word-break: break-all; }
  a.location { color: var(--osprey-link); font-family: var(--osprey-mono); text-decoration: none; }
  a.location:hover, a.location:focus { text-decoration: underline; }
  span.location { color: var(--osprey-muted); font-family: var(--osprey-mono); }
  #main { flex: 1; display: flex; min-height: 0; }
  #flame { flex: 1; position: relative; overflow-y: auto; overflow-x: hidden; min-width: 0; min-height: 0; }
  #flame canvas { display: block; cursor: default; outline: none; }
  #hot { width: 40%; min-width: 360px; max-width: 560px; overflow: auto;
         border-left: 1px solid var(--osprey-border); }
  @media (max-width: 899px) {
    #main { flex-direction: column; }
    #hot { width: auto; min-width: 0; max-width: none; height: 40%; flex: none;
           border-left: none; border-top: 1px solid var(--osprey-border); }
  }
  #hot table { border-collapse: collapse; width: 100%; table-layout: fixed; }
  #hot col.number { width: 7.5ch; } #hot col.location { width: 34%; }
  #hot caption { text-align: left; padding: 6px; color: var(--osprey-muted); }
  #hot th, #hot td { padding: 2px 6px; text-align: left; white-space: nowrap; overflow: hidden;
                     text-overflow: ellipsis; }
  #hot th.number, #hot td.number { text-align: right; text-overflow: clip; font-variant-numeric: tabular-nums; }
  #hot th { position: sticky; top: 0; background: var(--osprey-bg); cursor: pointer; user-select: none; }
  #hot th[aria-sort="descending"]::after { content: "\\25BE"; }
  #hot tbody tr { cursor: pointer; }
  #hot tbody tr:hover { background: var(--osprey-hover-bg); }
  #hot tbody tr[aria-selected="true"] { background: var(--osprey-row-selected-bg); }
  #tooltip { position: fixed; pointer-events: none; display: none; z-index: 10; max-width: 32em;
             background: var(--osprey-tooltip-bg); color: var(--osprey-tooltip-fg);
             border: 1px solid var(--osprey-tooltip-border); padding: 4px 8px; }
  #tooltip .name { font-weight: bold; word-break: break-all; }
  #tooltip .location { font-family: var(--osprey-mono); color: var(--osprey-muted); word-break: break-all; }
`;

const BODY = `<div id="toolbar">
  <button id="view-left-heavy" type="button" aria-pressed="true" title="Stacks merged, heaviest first">Left Heavy</button>
  <button id="view-time-order" type="button" aria-pressed="false" title="Samples in recorded order">Time Order</button>
  <label>Fiber <select id="fiber"></select></label>
  <button id="show-waiting" type="button" aria-pressed="false" title="Show time spent waiting (grey); it is never counted as CPU time">Waiting</button>
  <input id="search" type="search" placeholder="Search frames" aria-label="Search frames">
  <span id="match-summary"></span>
  <button id="reset" type="button" title="Reset zoom (0 or Escape)">Reset zoom</button>
  <button id="profile-again" type="button" hidden title="Run Osprey: Profile Current File on this profile's source again">Profile again</button>
  <span id="status">Waiting for a profile…</span>
</div>
<div id="details" class="hint" aria-live="polite"></div>
<div id="main">
  <div id="flame"><canvas id="canvas" tabindex="0" aria-label="Flame graph: click selects, double click zooms, Enter opens the source, 0 or Escape resets"></canvas></div>
  <div id="hot">
    <table id="hot-table">
      <caption id="hot-caption">Hot functions</caption>
      <colgroup><col class="name"><col class="number"><col class="number"><col class="location"></colgroup>
      <thead><tr><th scope="col">Function</th><th scope="col" class="number" id="sort-self" aria-sort="descending">Self</th><th scope="col" class="number" id="sort-total" aria-sort="none">Total</th><th scope="col">Location</th></tr></thead>
      <tbody id="hot-body"></tbody>
    </table>
  </div>
</div>
<div id="tooltip" role="tooltip"></div>`;

export function renderWebviewHtml(options: WebviewHtmlOptions): string {
  const nonce = escapeHtml(options.nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(options))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(options.title ?? 'Osprey flame graph')}</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
${BODY}
<script nonce="${nonce}" src="${escapeHtml(options.scriptUri)}"></script>
</body>
</html>
`;
}

/** Where `osprey` puts the profile (a JSON object, `<` escaped) and its title (HTML-escaped). */
export const TEMPLATE_DATA_MARKER = '@OSPREY_DATA@';
export const TEMPLATE_TITLE_MARKER = '@OSPREY_TITLE@';

/* The offline page template: everything inline, nothing fetched (the policy forbids it). The
 * bundled script must not close its <script> element early. */
export function renderOfflineTemplate(script: string): string {
  if (script.includes(TEMPLATE_DATA_MARKER) || script.includes(TEMPLATE_TITLE_MARKER)) {
    throw new Error('the bundled script contains a template marker');
  }
  const safeScript = script.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
  const policy = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(policy)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<meta name="generator" content="osprey (built from vscode/src; do not edit)">
<title>Osprey: ${TEMPLATE_TITLE_MARKER}</title>
<style>${STYLE}</style>
</head>
<body>
${BODY}
<script type="application/json" id="osprey-data">${TEMPLATE_DATA_MARKER}</script>
<script>${safeScript}</script>
</body>
</html>
`;
}
