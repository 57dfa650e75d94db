/*
 * The Osprey extension's entry point: builds the shared context and registers each feature —
 * the commands (commands.ts), the flame-graph panel and its restore after a reload
 * (flamePanel.ts) and the heat decorations (heatDecorations.ts). Everything that can be
 * decided without the editor lives in the pure modules beside them.
 */

import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { OspreyContext } from './context';
import { registerFlamePanelSerializer } from './flamePanel';
import { HeatDecorations } from './heatDecorations';

export function activate(extension: vscode.ExtensionContext): void {
  const octx = new OspreyContext(extension);
  octx.heat = new HeatDecorations();
  extension.subscriptions.push(octx, octx.heat, ...registerCommands(octx), registerFlamePanelSerializer(octx));
}

export function deactivate(): void {}
