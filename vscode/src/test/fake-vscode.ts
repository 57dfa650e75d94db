/*
 * A stand-in for the `vscode` module, just large enough to load src/extension.ts in plain
 * Node and record what it asks of the editor: registered commands, messages shown, output,
 * webview panels and what they post, editors opened, decorations set. It is a model of the
 * API as the extension uses it, not the API itself: it shows the wiring is right, not that
 * VS Code behaves as modelled.
 */
import Module from 'node:module';
import * as path from 'node:path';

type Listener<T> = (value: T) => unknown;

class Emitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
}

export class Uri {
  readonly scheme = 'file';
  private constructor(readonly fsPath: string) {}
  static file(fsPath: string): Uri {
    return new Uri(fsPath);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(path.join(base.fsPath, ...parts));
  }
  toString(): string {
    return `file://${this.fsPath}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export interface FakeDocument {
  uri: Uri;
  fileName: string;
  isDirty: boolean;
  lineCount: number;
  save(): Promise<boolean>;
  lineAt(line: number): { range: Range };
}

export function fakeDocument(fsPath: string, lineCount: number): FakeDocument {
  return {
    uri: Uri.file(fsPath),
    fileName: fsPath,
    isDirty: false,
    lineCount,
    save: async () => true,
    lineAt: (line: number) => ({ range: new Range(new Position(line, 0), new Position(line, 80)) }),
  };
}

export interface DecorationCall {
  type: { key: string; options: any };
  options: { range: Range; renderOptions: { after: { contentText: string } } }[];
}

export interface FakeEditor {
  document: FakeDocument;
  decorations: DecorationCall[];
  setDecorations(type: DecorationCall['type'], options: DecorationCall['options']): void;
}

export function fakeEditor(document: FakeDocument): FakeEditor {
  const editor: FakeEditor = {
    document,
    decorations: [],
    setDecorations: (type, options) => editor.decorations.push({ type, options }),
  };
  return editor;
}

export interface FakePanel {
  html: string;
  title: string;
  posted: unknown[];
  receive(message: unknown): void;
}

/* Everything the extension did, for the tests to inspect, and the knobs they turn. */
export const recorded = {
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  errors: [] as string[],
  infos: [] as string[],
  warnings: [] as string[],
  output: [] as string[],
  panels: [] as FakePanel[],
  shownDocuments: [] as { file: string; line: number }[],
  settings: new Map<string, unknown>(),
  /** When set, the next progress task's cancel button is pressed once this returns true. */
  cancelWhen: undefined as (() => boolean) | undefined,
  /** What the next Open dialog answers. */
  openDialogAnswer: undefined as Uri[] | undefined,
};

const visibleEditorsChanged = new Emitter<FakeEditor[]>();
const documentOpened = new Emitter<FakeDocument>();
const configurationChanged = new Emitter<{ affectsConfiguration(section: string): boolean }>();

export const window = {
  activeTextEditor: undefined as FakeEditor | undefined,
  visibleTextEditors: [] as FakeEditor[],
  createOutputChannel: () => ({
    append: (text: string) => recorded.output.push(text),
    appendLine: (text: string) => recorded.output.push(`${text}\n`),
    clear: () => (recorded.output.length = 0),
    show: () => undefined,
    dispose: () => undefined,
  }),
  showErrorMessage: async (message: string) => {
    recorded.errors.push(message);
    return undefined;
  },
  showWarningMessage: async (message: string) => {
    recorded.warnings.push(message);
    return undefined;
  },
  showInformationMessage: async (message: string) => {
    recorded.infos.push(message);
    return undefined;
  },
  withProgress: async (_options: unknown, task: (progress: unknown, token: unknown) => Promise<unknown>) => {
    const cancel = new Emitter<void>();
    const running = task({ report: () => undefined }, { onCancellationRequested: cancel.event });
    const cancelWhen = recorded.cancelWhen;
    recorded.cancelWhen = undefined;
    if (cancelWhen) {
      const poll = setInterval(() => {
        if (!cancelWhen()) return;
        clearInterval(poll);
        cancel.fire();
      }, 10);
      running.finally(() => clearInterval(poll));
    }
    return running;
  },
  createWebviewPanel: () => {
    const received = new Emitter<unknown>();
    const panel: FakePanel & Record<string, unknown> = {
      html: '',
      title: '',
      posted: [],
      receive: (message: unknown) => received.fire(message),
    };
    const webview = {
      cspSource: 'vscode-resource:',
      asWebviewUri: (uri: Uri) => uri,
      onDidReceiveMessage: received.event,
      postMessage: async (message: unknown) => panel.posted.push(message),
      set html(value: string) {
        panel.html = value;
      },
    };
    recorded.panels.push(panel);
    return {
      webview,
      set title(value: string) {
        panel.title = value;
      },
      reveal: () => undefined,
      onDidDispose: new Emitter<void>().event,
      dispose: () => undefined,
    };
  },
  createTextEditorDecorationType: (options: unknown) => ({
    key: `decoration-${Math.random()}`,
    options,
    dispose: () => undefined,
  }),
  onDidChangeVisibleTextEditors: visibleEditorsChanged.event,
  showTextDocument: async (document: FakeDocument, options: { selection: Range }) => {
    recorded.shownDocuments.push({ file: document.uri.fsPath, line: options.selection.start.line });
  },
  showOpenDialog: async () => recorded.openDialogAnswer,
};

export const workspace = {
  getConfiguration: (section: string) => ({
    get: <T>(key: string, fallback: T): T =>
      recorded.settings.has(`${section}.${key}`) ? (recorded.settings.get(`${section}.${key}`) as T) : fallback,
  }),
  onDidOpenTextDocument: documentOpened.event,
  onDidChangeConfiguration: configurationChanged.event,
  openTextDocument: async (uri: Uri) => fakeDocument(uri.fsPath, 100),
};

export const commands = {
  registerCommand: (id: string, handler: (...args: unknown[]) => unknown) => {
    recorded.commands.set(id, handler);
    return { dispose: () => recorded.commands.delete(id) };
  },
};

export const ProgressLocation = { Notification: 15 };
export const ViewColumn = { One: 1, Beside: -2 };
export const OverviewRulerLane = { Right: 4 };

/* Editor events the tests fire. */
export function showEditors(editors: FakeEditor[]): void {
  window.visibleTextEditors = editors;
  visibleEditorsChanged.fire(editors);
}

export function changeSetting(key: string, value: unknown): void {
  recorded.settings.set(key, value);
  configurationChanged.fire({ affectsConfiguration: (section: string) => key.startsWith(section) });
}

/* Makes `require('vscode')` answer this module. */
export function installFakeVscode(): void {
  const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const original = loader._load;
  loader._load = function (request: string, ...rest: unknown[]) {
    if (request === 'vscode') return module.exports;
    return original.call(this, request, ...rest);
  };
}
