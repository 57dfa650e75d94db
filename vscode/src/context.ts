/*
 * The state the extension's features share, in one place: the output channel, the Problems
 * panel's collection for compiler errors, the heat decorations, the flame-graph panel, where
 * profiles are kept, and the one run that may be in progress.
 */

import * as vscode from 'vscode';
import type { FlamePanel } from './flamePanel';
import type { HeatDecorations } from './heatDecorations';

export class OspreyContext implements vscode.Disposable {
  readonly output = vscode.window.createOutputChannel('Osprey');
  readonly diagnostics = vscode.languages.createDiagnosticCollection('osprey');
  heat!: HeatDecorations;
  /** The flame-graph panel while one is open. */
  panel: FlamePanel | undefined;
  /** One run at a time. */
  runInProgress = false;
  /** The source file of the profile on show, for "Profile again". */
  lastSource: string | undefined;

  constructor(readonly extension: vscode.ExtensionContext) {}

  /** Where kept profiles live (survives window reloads). */
  get storage(): string {
    return this.extension.globalStorageUri.fsPath;
  }

  dispose(): void {
    this.panel?.dispose();
    this.output.dispose();
    this.diagnostics.dispose();
  }
}
