/*
 * The two commands. "Osprey: Profile Current File" runs the CLI on the C file in the active
 * editor — or, when the flame graph has focus, the C file visible beside it — behind a
 * cancellable progress notification, puts compiler errors in the Problems panel, keeps the
 * profile somewhere that lasts and shows it. "Osprey: Open Profile…" shows an existing one.
 * Every message starts with `Osprey:` and names no temporary path.
 */

import * as fs from 'fs/promises';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { locateCli } from './cliLocation';
import { parseCompilerOutput } from './compilerDiagnostics';
import type { OspreyContext } from './context';
import { showProfile } from './flamePanel';
import { speedscopePathFor } from './model';
import { exists, keepProfile } from './profileStore';
import { CliStartError, describeFailure, runProfiler } from './runner';

const SOURCE_LANGUAGES = new Set(['c', 'cpp']);
const OPEN_SETTING = 'Open Setting';

export function registerCommands(octx: OspreyContext): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand('osprey.profileCurrentFile', (file?: unknown) =>
      profileCurrentFile(octx, typeof file === 'string' ? file : undefined),
    ),
    vscode.commands.registerCommand('osprey.openProfile', () => openProfile(octx)),
  ];
}

/* The document to profile: the active editor's; with the focus elsewhere (the flame graph),
 * the visible C editor; failing that, the file the profile on show came from. */
async function sourceToProfile(octx: OspreyContext, requested?: string): Promise<vscode.TextDocument | undefined> {
  if (requested) return vscode.workspace.openTextDocument(vscode.Uri.file(requested));
  const active = vscode.window.activeTextEditor;
  if (active && active.document.uri.scheme === 'file') return active.document;
  const visible = vscode.window.visibleTextEditors.filter((editor) => editor.document.uri.scheme === 'file');
  const source = visible.find((editor) => SOURCE_LANGUAGES.has(editor.document.languageId)) ?? visible[0];
  if (source) return source.document;
  if (octx.lastSource) return vscode.workspace.openTextDocument(vscode.Uri.file(octx.lastSource));
  return undefined;
}

async function profileCurrentFile(octx: OspreyContext, requested?: string): Promise<void> {
  if (octx.runInProgress) {
    void vscode.window.showErrorMessage('Osprey: a profiling run is already in progress.');
    return;
  }
  octx.runInProgress = true;
  try {
    await profile(octx, requested);
  } finally {
    octx.runInProgress = false;
  }
}

function offerSetting(message: string): void {
  void vscode.window.showErrorMessage(message, OPEN_SETTING).then((choice) => {
    if (choice === OPEN_SETTING) void vscode.commands.executeCommand('workbench.action.openSettings', 'osprey.cliPath');
  });
}

async function profile(octx: OspreyContext, requested?: string): Promise<void> {
  const document = await sourceToProfile(octx, requested);
  if (!document) {
    void vscode.window.showErrorMessage('Osprey: open a C source file (saved on disk) to profile it.');
    return;
  }
  const name = path.basename(document.fileName);
  if (document.isDirty && !(await document.save())) {
    void vscode.window.showErrorMessage(`Osprey: could not save ${name} before profiling.`);
    return;
  }
  const file = document.uri.fsPath;
  const setting = vscode.workspace.getConfiguration('osprey').get<string>('cliPath', 'osprey');
  const folders = (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath);
  const lookup = locateCli(setting, folders);
  if (!lookup.cli) {
    offerSetting(
      `Osprey: the osprey CLI was not found (looked for ${lookup.looked.join(', ')}). Build it (meson setup build && ninja -C build) or set osprey.cliPath.`,
    );
    return;
  }
  const cli = lookup.cli;
  const outputDirectory = await fs.mkdtemp(path.join(os.tmpdir(), 'osprey-'));
  const stem = path.join(outputDirectory, path.parse(file).name);
  const output = octx.output;
  octx.diagnostics.clear();
  output.clear();
  output.show(true);
  output.appendLine(`$ ${cli} ${file} --run --profile -o ${stem}`);
  let stderr = '';

  try {
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
            onOutput: (text, stream) => {
              if (stream === 'stderr') stderr += text;
              output.append(text);
            },
          });
        },
      );
    } catch (error) {
      const message = error instanceof CliStartError ? error.message : `Osprey: ${(error as Error).message}`;
      output.appendLine(message);
      if (error instanceof CliStartError && error.code === 'ENOENT') offerSetting(message);
      else void vscode.window.showErrorMessage(message);
      return;
    }

    output.appendLine(
      result.cancelled ? '[cancelled]' : result.signal ? `[the CLI was killed by ${result.signal}]` : `[exit status ${result.exitCode}]`,
    );
    const problems = showCompilerDiagnostics(octx, stderr, path.dirname(file));
    const failure = describeFailure(result, name, [outputDirectory]);
    const speedscopePath = `${stem}.speedscope.json`;
    const kept = (await exists(speedscopePath)) ? await keepProfile(octx.storage, stem, file) : undefined;
    if (result.cancelled) {
      // The CLI writes the profile of what ran when stopped; show it if it got that far.
      void vscode.window.showInformationMessage(failure!);
    } else if (failure) {
      // A program that crashed or exited non-zero may still have a profile worth reading.
      const action = problems > 0 ? 'Show Problems' : 'Show Output';
      void vscode.window.showErrorMessage(failure, action).then((choice) => {
        if (choice === 'Show Problems') void vscode.commands.executeCommand('workbench.actions.view.problems');
        else if (choice) output.show();
      });
    } else if (!kept) {
      void vscode.window.showErrorMessage(`Osprey: the CLI succeeded but wrote no ${path.basename(speedscopePath)}.`);
    }
    if (kept) await showProfile(octx, kept, file);
  } finally {
    await fs.rm(outputDirectory, { recursive: true, force: true });
  }
}

/* Compiler errors and warnings from the run, in the Problems panel; returns how many. */
function showCompilerDiagnostics(octx: OspreyContext, stderr: string, cwd: string): number {
  const byFile = new Map<string, vscode.Diagnostic[]>();
  const found = parseCompilerOutput(stderr, cwd);
  for (const item of found) {
    const position = new vscode.Position(item.line - 1, item.column - 1);
    const severity =
      item.severity === 'error'
        ? vscode.DiagnosticSeverity.Error
        : item.severity === 'warning'
          ? vscode.DiagnosticSeverity.Warning
          : vscode.DiagnosticSeverity.Information;
    const diagnostic = new vscode.Diagnostic(new vscode.Range(position, position), item.message, severity);
    diagnostic.source = 'osprey (clang)';
    byFile.set(item.file, [...(byFile.get(item.file) ?? []), diagnostic]);
  }
  for (const [file, list] of byFile) octx.diagnostics.set(vscode.Uri.file(file), list);
  return found.length;
}

async function openProfile(octx: OspreyContext): Promise<void> {
  const chosen = await vscode.window.showOpenDialog({
    canSelectMany: false,
    openLabel: 'Open Profile',
    filters: { 'Osprey profile': ['json'] },
  });
  if (!chosen || chosen.length === 0) return;
  await showProfile(octx, speedscopePathFor(chosen[0].fsPath));
}
