/*
 * The editor side of the Osprey extension: the two commands, the run behind a cancellable
 * progress notification, the flame-graph webview panel and the heat decorations. Everything
 * that can be decided without the editor (parsing, layout, colours, heat tiers, the CLI run)
 * lives in the pure modules; this file wires them to the VS Code API.
 */

import * as fs from 'fs/promises';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { heatForFile, type HeatTier } from './heat';
import {
  parseProfileSummary,
  parseSpeedscope,
  siblingSummaryPath,
  speedscopePathFor,
  type FlameDocument,
  type ProfileSummary,
} from './model';
import { parseFromWebview, type LoadMessage } from './protocol';
import { CliStartError, describeFailure, runProfiler } from './runner';
import { makeNonce, renderWebviewHtml } from './webviewHtml';

let output: vscode.OutputChannel;
let heat: HeatDecorations;
let panel: FlamePanel | undefined;
/** The latest run's temporary directory; removed when the next run starts or on deactivate. */
let lastOutputDirectory: string | undefined;
/** One run at a time: a second would remove the first one's output directory. */
let runInProgress = false;

export function activate(context: vscode.ExtensionContext): void {
  output = vscode.window.createOutputChannel('Osprey');
  heat = new HeatDecorations();
  context.subscriptions.push(
    output,
    heat,
    vscode.commands.registerCommand('osprey.profileCurrentFile', () => profileCurrentFile(context)),
    vscode.commands.registerCommand('osprey.openProfile', () => openProfileCommand(context)),
  );
}

export async function deactivate(): Promise<void> {
  panel?.dispose();
  await removeLastOutput();
}

async function removeLastOutput(): Promise<void> {
  if (lastOutputDirectory) await fs.rm(lastOutputDirectory, { recursive: true, force: true });
  lastOutputDirectory = undefined;
}

/* ---------- Osprey: Profile Current File ---------- */

async function profileCurrentFile(context: vscode.ExtensionContext): Promise<void> {
  if (runInProgress) {
    void vscode.window.showErrorMessage('Osprey: a profiling run is already in progress.');
    return;
  }
  runInProgress = true;
  try {
    await profileActiveEditor(context);
  } finally {
    runInProgress = false;
  }
}

async function profileActiveEditor(context: vscode.ExtensionContext): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== 'file') {
    void vscode.window.showErrorMessage('Osprey: open a C source file (saved on disk) to profile it.');
    return;
  }
  const document = editor.document;
  if (document.isDirty && !(await document.save())) {
    void vscode.window.showErrorMessage(`Osprey: could not save ${document.fileName} before profiling.`);
    return;
  }
  const file = document.uri.fsPath;
  const cli = vscode.workspace.getConfiguration('osprey').get<string>('cliPath', 'osprey') || 'osprey';
  // Everything the viewer needs is read into memory, so the previous run's files can go.
  await removeLastOutput();
  const outputDirectory = await fs.mkdtemp(path.join(os.tmpdir(), 'osprey-'));
  lastOutputDirectory = outputDirectory;
  const stem = path.join(outputDirectory, path.parse(file).name);
  const name = path.basename(file);

  output.clear();
  output.show(true);
  output.appendLine(`$ ${cli} ${file} --run --profile -o ${stem}`);

  let result;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Osprey: profiling ${name}…`, cancellable: true },
      (_progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        return runProfiler({
          cli,
          file,
          stem,
          cwd: path.dirname(file),
          signal: abort.signal,
          onOutput: (text) => output.append(text),
        });
      },
    );
  } catch (error) {
    const message = error instanceof CliStartError ? error.message : `Osprey: ${(error as Error).message}`;
    output.appendLine(message);
    void vscode.window.showErrorMessage(message);
    return;
  }

  output.appendLine(
    result.cancelled
      ? '[cancelled]'
      : result.signal
        ? `[the CLI was killed by ${result.signal}]`
        : `[exit status ${result.exitCode}]`,
  );
  const failure = describeFailure(result, name);
  const speedscopePath = `${stem}.speedscope.json`;
  const haveProfile = await exists(speedscopePath);
  if (result.cancelled) {
    // The CLI writes the profile of what ran when stopped; show it if it got that far.
    void vscode.window.showInformationMessage(failure!);
    if (haveProfile) await openResults(context, speedscopePath);
    return;
  }
  if (failure) {
    // A program that crashed or exited non-zero may still have a profile worth reading.
    void vscode.window.showErrorMessage(failure, 'Show Output').then((choice) => {
      if (choice) output.show();
    });
    if (!haveProfile) return;
  } else if (!haveProfile) {
    void vscode.window.showErrorMessage(`Osprey: the CLI succeeded but wrote no ${speedscopePath}.`);
    return;
  }
  await openResults(context, speedscopePath);
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

/* ---------- Osprey: Open Profile… ---------- */

async function openProfileCommand(context: vscode.ExtensionContext): Promise<void> {
  const chosen = await vscode.window.showOpenDialog({
    canSelectMany: false,
    openLabel: 'Open Profile',
    filters: { 'Speedscope profile': ['json'] },
  });
  if (!chosen || chosen.length === 0) return;
  await openResults(context, speedscopePathFor(chosen[0].fsPath));
}

/* Reads `<stem>.speedscope.json` and, if present, the sibling `<stem>.profile.json`; shows the
 * flame graph and applies heat. A bad file is one error message naming it. */
async function openResults(context: vscode.ExtensionContext, speedscopePath: string): Promise<void> {
  let flame: FlameDocument;
  let summary: ProfileSummary | undefined;
  try {
    flame = parseSpeedscope(await fs.readFile(speedscopePath, 'utf8'), speedscopePath);
    const summaryPath = siblingSummaryPath(speedscopePath);
    if (summaryPath && (await exists(summaryPath))) {
      summary = parseProfileSummary(await fs.readFile(summaryPath, 'utf8'), summaryPath);
    }
  } catch (error) {
    void vscode.window.showErrorMessage(`Osprey: ${(error as Error).message}`);
    return;
  }
  const title = `Osprey: ${flame.name || path.basename(speedscopePath)}`;
  panel ??= new FlamePanel(context, () => (panel = undefined));
  panel.show({ type: 'load', title, document: flame, summary });
  heat.setSummary(summary);
}

/* ---------- the flame-graph panel ---------- */

class FlamePanel {
  private readonly webviewPanel: vscode.WebviewPanel;
  /** The profile on show; sent again whenever the page (re)announces it is ready. */
  private current: LoadMessage | undefined;
  private ready = false;

  constructor(context: vscode.ExtensionContext, onDispose: () => void) {
    const scriptRoot = vscode.Uri.joinPath(context.extensionUri, 'out', 'webview');
    this.webviewPanel = vscode.window.createWebviewPanel(
      'osprey.flameGraph',
      'Osprey',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [scriptRoot] },
    );
    const webview = this.webviewPanel.webview;
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
      } else {
        void openSource(message.file, message.line);
      }
    });
    this.webviewPanel.onDidDispose(onDispose);
  }

  show(message: LoadMessage): void {
    this.current = message;
    this.webviewPanel.title = message.title;
    this.webviewPanel.reveal(undefined, true);
    this.flush();
  }

  private flush(): void {
    if (this.ready && this.current) void this.webviewPanel.webview.postMessage(this.current);
  }

  dispose(): void {
    this.webviewPanel.dispose();
  }
}

async function openSource(file: string, line: number): Promise<void> {
  // Debug info may name files relative to a build directory that is not here (libc's
  // "./nptl/…") or with "..": normalise, and say plainly when the source is not on disk.
  const resolved = path.resolve(file);
  if (!(await exists(resolved))) {
    void vscode.window.showWarningMessage(`Osprey: source not found on this machine: ${file}:${line}`);
    return;
  }
  try {
    const document = await vscode.workspace.openTextDocument(vscode.Uri.file(resolved));
    const position = new vscode.Position(Math.max(0, Math.min(line - 1, document.lineCount - 1)), 0);
    await vscode.window.showTextDocument(document, {
      viewColumn: vscode.ViewColumn.One,
      selection: new vscode.Range(position, position),
      preserveFocus: false,
    });
  } catch (error) {
    void vscode.window.showErrorMessage(`Osprey: cannot open ${file}:${line}: ${(error as Error).message}`);
  }
}

/* ---------- heat decorations ---------- */

const TIER_STYLE: Record<HeatTier, { colour: string | vscode.ThemeColor; ruler?: string }> = {
  hot: { colour: '#e5533d', ruler: 'rgba(229, 83, 61, 0.9)' },
  warm: { colour: '#d99a2b', ruler: 'rgba(217, 154, 43, 0.7)' },
  cool: { colour: new vscode.ThemeColor('editorCodeLens.foreground') },
};

class HeatDecorations implements vscode.Disposable {
  private summary: ProfileSummary | undefined;
  private readonly types: Record<HeatTier, vscode.TextEditorDecorationType>;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor() {
    const make = (tier: HeatTier) =>
      vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        after: { color: TIER_STYLE[tier].colour, margin: '0 0 0 2em', fontStyle: 'italic' },
        overviewRulerColor: TIER_STYLE[tier].ruler,
        overviewRulerLane: vscode.OverviewRulerLane.Right,
      });
    this.types = { hot: make('hot'), warm: make('warm'), cool: make('cool') };
    this.subscriptions.push(
      vscode.window.onDidChangeVisibleTextEditors(() => this.applyAll()),
      vscode.workspace.onDidOpenTextDocument(() => this.applyAll()),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration('osprey.heat.enabled')) this.applyAll();
      }),
    );
  }

  setSummary(summary: ProfileSummary | undefined): void {
    this.summary = summary;
    this.applyAll();
  }

  private enabled(): boolean {
    return vscode.workspace.getConfiguration('osprey').get<boolean>('heat.enabled', true);
  }

  private applyAll(): void {
    for (const editor of vscode.window.visibleTextEditors) this.apply(editor);
  }

  private apply(editor: vscode.TextEditor): void {
    const byTier: Record<HeatTier, vscode.DecorationOptions[]> = { hot: [], warm: [], cool: [] };
    const summary = this.summary;
    if (summary && this.enabled() && editor.document.uri.scheme === 'file') {
      const file = editor.document.uri.fsPath;
      for (const entry of heatForFile(summary, file)) {
        if (entry.line >= editor.document.lineCount) continue;
        byTier[entry.tier].push({
          range: editor.document.lineAt(entry.line).range,
          renderOptions: { after: { contentText: entry.text } },
          hoverMessage: `Osprey: ${entry.text} (percent of on-CPU samples with this line on the stack)`,
        });
      }
    }
    for (const tier of ['hot', 'warm', 'cool'] as const) editor.setDecorations(this.types[tier], byTier[tier]);
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
    for (const type of Object.values(this.types)) type.dispose();
  }
}
