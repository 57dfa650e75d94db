/*
 * The flame-graph webview's HTML: layout, theme-aware styles (VS Code's CSS variables, with
 * fallbacks so the page also renders outside the editor) and a strict content-security policy.
 * Only the one nonced script runs; styles are the one nonced <style> block (the script sets
 * individual style properties through the CSSOM, which the policy allows).
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

export function renderWebviewHtml(options: WebviewHtmlOptions): string {
  const nonce = escapeHtml(options.nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(options))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(options.title ?? 'Osprey flame graph')}</title>
<style nonce="${nonce}">
  :root {
    --osprey-bg: var(--vscode-editor-background, #1e1e1e);
    --osprey-fg: var(--vscode-editor-foreground, #d4d4d4);
    --osprey-muted: var(--vscode-descriptionForeground, #9d9d9d);
    --osprey-border: var(--vscode-panel-border, #3c3c3c);
    --osprey-input-bg: var(--vscode-input-background, #3c3c3c);
    --osprey-input-fg: var(--vscode-input-foreground, #cccccc);
    --osprey-input-border: var(--vscode-input-border, #3c3c3c);
    --osprey-button-bg: var(--vscode-button-secondaryBackground, #3a3d41);
    --osprey-button-fg: var(--vscode-button-secondaryForeground, #ffffff);
    --osprey-active-bg: var(--vscode-button-background, #0e639c);
    --osprey-active-fg: var(--vscode-button-foreground, #ffffff);
    --osprey-hover-bg: var(--vscode-list-hoverBackground, #2a2d2e);
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
  #toolbar button { background: var(--osprey-button-bg); color: var(--osprey-button-fg); cursor: pointer; }
  #toolbar button[aria-pressed="true"] { background: var(--osprey-active-bg); color: var(--osprey-active-fg); }
  #search { width: 16em; }
  #match-summary, #status { color: var(--osprey-muted); }
  #main { flex: 1; display: flex; min-height: 0; }
  #flame { flex: 1; position: relative; overflow-y: auto; overflow-x: hidden; min-width: 0; }
  #flame canvas { display: block; cursor: default; }
  #hot { width: 34%; min-width: 260px; max-width: 480px; overflow: auto;
         border-left: 1px solid var(--osprey-border); }
  #hot table { border-collapse: collapse; width: 100%; table-layout: fixed; }
  #hot col.name { width: 40%; } #hot col.number { width: 15%; } #hot col.location { width: 30%; }
  #hot caption { text-align: left; padding: 6px; color: var(--osprey-muted); }
  #hot th, #hot td { padding: 2px 6px; text-align: right; white-space: nowrap; overflow: hidden;
                     text-overflow: ellipsis; }
  #hot th:first-child, #hot td:first-child { text-align: left; }
  #hot th { position: sticky; top: 0; background: var(--osprey-bg); cursor: pointer; user-select: none; }
  #hot th[aria-sort="descending"]::after { content: " \\25BE"; }
  #hot tbody tr { cursor: pointer; }
  #hot tbody tr:hover { background: var(--osprey-hover-bg); }
  #hot td.location { color: var(--osprey-muted); font-family: var(--osprey-mono); text-align: left; }
  #tooltip { position: fixed; pointer-events: none; display: none; z-index: 10; max-width: 32em;
             background: var(--osprey-tooltip-bg); color: var(--osprey-tooltip-fg);
             border: 1px solid var(--osprey-tooltip-border); padding: 4px 8px; }
  #tooltip .name { font-weight: bold; word-break: break-all; }
  #tooltip .location { font-family: var(--osprey-mono); color: var(--osprey-muted); word-break: break-all; }
</style>
</head>
<body>
<div id="toolbar">
  <button id="view-left-heavy" type="button" aria-pressed="true" title="Stacks merged, heaviest first">Left Heavy</button>
  <button id="view-time-order" type="button" aria-pressed="false" title="Samples in recorded order">Time Order</button>
  <label>Fiber <select id="fiber"></select></label>
  <input id="search" type="search" placeholder="Search frames" aria-label="Search frames">
  <span id="match-summary"></span>
  <button id="reset" type="button" title="Reset zoom (0 or Escape)">Reset zoom</button>
  <span id="status">Waiting for a profile…</span>
</div>
<div id="main">
  <div id="flame"><canvas id="canvas" aria-label="Flame graph"></canvas></div>
  <div id="hot">
    <table id="hot-table">
      <caption id="hot-caption">Hot functions</caption>
      <colgroup><col class="name"><col class="number"><col class="number"><col class="location"></colgroup>
      <thead><tr><th scope="col">Function</th><th scope="col" id="sort-self" aria-sort="descending">Self</th><th scope="col" id="sort-total" aria-sort="none">Total</th><th scope="col">Location</th></tr></thead>
      <tbody id="hot-body"></tbody>
    </table>
  </div>
</div>
<div id="tooltip" role="tooltip"></div>
<script nonce="${nonce}" src="${escapeHtml(options.scriptUri)}"></script>
</body>
</html>
`;
}
