/*
 * Per-line heat in the editor: after each profiled line of a profiled file, `NN.N% · M
 * samples` in the tier's colour (contributed ThemeColors `osprey.heat.*`, defined for every
 * theme kind including High Contrast) with overview-ruler marks for hot and warm lines.
 * Follows files opened or shown later, and the `osprey.heat.enabled` setting.
 */

import * as vscode from 'vscode';
import { heatForFile, type HeatTier } from './heat';
import type { ProfileSummary } from './model';

const TIERS: HeatTier[] = ['hot', 'warm', 'cool'];

export class HeatDecorations implements vscode.Disposable {
  private summary: ProfileSummary | undefined;
  private readonly types: Record<HeatTier, vscode.TextEditorDecorationType>;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor() {
    const make = (tier: HeatTier) =>
      vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        after: { color: new vscode.ThemeColor(`osprey.heat.${tier}Foreground`), margin: '0 0 0 2em', fontStyle: 'italic' },
        overviewRulerColor: tier === 'cool' ? undefined : new vscode.ThemeColor(`osprey.heat.${tier}Foreground`),
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
      for (const entry of heatForFile(summary, editor.document.uri.fsPath)) {
        if (entry.line >= editor.document.lineCount) continue;
        byTier[entry.tier].push({
          range: editor.document.lineAt(entry.line).range,
          renderOptions: { after: { contentText: entry.text } },
          hoverMessage: `Osprey: ${entry.text} (share of on-CPU samples with this line on the stack)`,
        });
      }
    }
    for (const tier of TIERS) editor.setDecorations(this.types[tier], byTier[tier]);
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
    for (const type of Object.values(this.types)) type.dispose();
  }
}
