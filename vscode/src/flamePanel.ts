/*
 * The flame-graph panel: one webview panel showing the latest profile, placed beside the
 * source (never in a third column), restored after a window reload by a webview serializer
 * from the kept copy of the profile, and the source locations it asks for opened in the
 * editor group beside it (never over the graph).
 */

import * as fs from 'fs/promises';
import * as path from 'path';
import * as vscode from 'vscode';
import type { OspreyContext } from './context';
import { parseProfileSummary, parseSpeedscope, siblingSummaryPath } from './model';
import { exists } from './profileStore';
import { parseFromWebview, parseWebviewState, type LoadMessage } from './protocol';
import { makeNonce, renderWebviewHtml } from './webviewHtml';

export const VIEW_TYPE = 'osprey.flameGraph';

/* Reads `<stem>.speedscope.json` and, if present, its sibling `<stem>.profile.json`. Throws
 * with a one-line message naming the file on bad input. */
export async function readProfile(speedscopePath: string): Promise<Omit<LoadMessage, 'type' | 'title'> & { title: string }> {
  const document = parseSpeedscope(await fs.readFile(speedscopePath, 'utf8'), path.basename(speedscopePath));
  const summaryPath = siblingSummaryPath(speedscopePath);
  const summary =
    summaryPath && (await exists(summaryPath))
      ? parseProfileSummary(await fs.readFile(summaryPath, 'utf8'), path.basename(summaryPath))
      : undefined;
  const title = `Osprey: ${document.name || path.basename(speedscopePath, '.speedscope.json')}`;
  return { title, document, summary };
}

/* The group for the panel: beside the source, without making a third column. */
function panelColumn(): vscode.ViewColumn {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  const column = editor?.viewColumn ?? vscode.ViewColumn.One;
  return column === vscode.ViewColumn.One ? vscode.ViewColumn.Two : column - 1;
}

export class FlamePanel implements vscode.Disposable {
  private current: LoadMessage | undefined;
  private ready = false;

  private constructor(
    private readonly octx: OspreyContext,
    private readonly webviewPanel: vscode.WebviewPanel,
  ) {
    const scriptRoot = vscode.Uri.joinPath(octx.extension.extensionUri, 'out', 'webview');
    const webview = webviewPanel.webview;
    webview.options = { enableScripts: true, localResourceRoots: [scriptRoot] };
    webview.html = renderWebviewHtml({
      cspSource: webview.cspSource,
      nonce: makeNonce(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(scriptRoot, 'flamegraph.js')).toString(),
    });
    webview.onDidReceiveMessage((raw) => {
      const message = parseFromWebview(raw);
      if (!message) return;
      if (message.type === 'ready') {
        this.ready = true;
        this.flush();
      } else if (message.type === 'openSource') {
        void this.openSource(message.file, message.line);
      } else {
        void vscode.commands.executeCommand('osprey.profileCurrentFile', this.current?.source);
      }
    });
    webviewPanel.onDidDispose(() => {
      if (octx.panel === this) octx.panel = undefined;
    });
  }

  static create(octx: OspreyContext): FlamePanel {
    const panel = vscode.window.createWebviewPanel(
      VIEW_TYPE,
      'Osprey',
      { viewColumn: panelColumn(), preserveFocus: true },
      { enableScripts: true, retainContextWhenHidden: true },
    );
    return new FlamePanel(octx, panel);
  }

  static revive(octx: OspreyContext, panel: vscode.WebviewPanel): FlamePanel {
    return new FlamePanel(octx, panel);
  }

  show(message: LoadMessage): void {
    this.current = message;
    this.webviewPanel.title = message.title;
    if (!this.webviewPanel.visible) this.webviewPanel.reveal(undefined, true);
    this.flush();
  }

  private flush(): void {
    if (this.ready && this.current) void this.webviewPanel.webview.postMessage(this.current);
  }

  /* Opens a source location beside the graph: in a group showing a text editor other than the
   * panel's own, else in the group next to it. */
  private async openSource(file: string, line: number): Promise<void> {
    const resolved = path.resolve(file);
    if (!(await exists(resolved))) {
      void vscode.window.showWarningMessage(`Osprey: source not found on this machine: ${file}:${line}`);
      return;
    }
    const own = this.webviewPanel.viewColumn ?? vscode.ViewColumn.One;
    const editors = vscode.window.visibleTextEditors.filter((editor) => editor.viewColumn !== undefined && editor.viewColumn !== own);
    const sameFile = editors.find((editor) => editor.document.uri.fsPath === resolved);
    const column = (sameFile ?? editors[0])?.viewColumn ?? (own === vscode.ViewColumn.One ? vscode.ViewColumn.Two : vscode.ViewColumn.One);
    try {
      const document = await vscode.workspace.openTextDocument(vscode.Uri.file(resolved));
      const position = new vscode.Position(Math.max(0, Math.min(line - 1, document.lineCount - 1)), 0);
      await vscode.window.showTextDocument(document, {
        viewColumn: column,
        selection: new vscode.Range(position, position),
        preserveFocus: false,
      });
    } catch (error) {
      void vscode.window.showErrorMessage(`Osprey: cannot open ${path.basename(file)}:${line}: ${(error as Error).message}`);
    }
  }

  dispose(): void {
    this.webviewPanel.dispose();
  }
}

/* Shows a profile (a kept `.speedscope.json`, its `.profile.json` beside it) in the panel and
 * its heat in the editor. A bad file is one error message naming it. */
export async function showProfile(octx: OspreyContext, speedscopePath: string, source?: string): Promise<boolean> {
  let loaded;
  try {
    loaded = await readProfile(speedscopePath);
  } catch (error) {
    void vscode.window.showErrorMessage(`Osprey: ${(error as Error).message}`);
    return false;
  }
  octx.panel ??= FlamePanel.create(octx);
  octx.panel.show({ type: 'load', ...loaded, restorePath: speedscopePath, source });
  octx.heat.setSummary(loaded.summary);
  if (source) octx.lastSource = source;
  return true;
}

/* Restores the panel after a window reload from the state its page kept. */
export function registerFlamePanelSerializer(octx: OspreyContext): vscode.Disposable {
  return vscode.window.registerWebviewPanelSerializer(VIEW_TYPE, {
    async deserializeWebviewPanel(panel: vscode.WebviewPanel, raw: unknown) {
      const state = parseWebviewState(raw);
      octx.panel?.dispose();
      octx.panel = FlamePanel.revive(octx, panel);
      if (!state || !(await exists(state.restorePath))) {
        panel.title = 'Osprey';
        return;
      }
      await showProfile(octx, state.restorePath, state.source);
    },
  });
}
