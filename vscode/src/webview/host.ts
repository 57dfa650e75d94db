/*
 * The two hosts of the one flame-graph renderer. In VS Code the page talks to the extension
 * through acquireVsCodeApi(): it says when it is ready, asks for a source location to be
 * opened or the file to be profiled again, and keeps which profile it shows in the webview
 * state so a reloaded window can restore it. In the offline HTML page that `osprey` writes,
 * the profile is embedded in the page itself (`<script type="application/json"
 * id="osprey-data">`) and a source location can only be shown, not opened.
 */

import { parseProfileSummary, parseSpeedscope } from '../model';
import type { FromWebview, LoadMessage, WebviewState } from '../protocol';

export interface Host {
  /** True when the page can ask the editor to open sources and run the profiler. */
  readonly editor: boolean;
  post(message: FromWebview): void;
  setState(state: WebviewState): void;
  /** Delivers load messages to `onLoad`, now or when they arrive. */
  start(onLoad: (message: LoadMessage) => void, onError: (problem: string) => void): void;
}

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  setState(state: unknown): void;
}
declare const acquireVsCodeApi: (() => VsCodeApi) | undefined;

function editorHost(api: VsCodeApi): Host {
  return {
    editor: true,
    post: (message) => api.postMessage(message),
    setState: (state) => api.setState(state),
    start(onLoad) {
      window.addEventListener('message', (event: MessageEvent) => {
        const message = event.data as LoadMessage;
        if (message && message.type === 'load') onLoad(message);
      });
      api.postMessage({ type: 'ready' });
    },
  };
}

/** The id of the element the offline page keeps its profile in. */
export const PAGE_DATA_ID = 'osprey-data';

/* The embedded document: {"speedscope": <STEM.speedscope.json>, "summary": <STEM.profile.json>
 * or null, "title": "…"}, validated by the same parsers as the extension's. */
function pageHost(): Host {
  return {
    editor: false,
    post: () => {},
    setState: () => {},
    start(onLoad, onError) {
      const element = document.getElementById(PAGE_DATA_ID);
      try {
        if (!element?.textContent) throw new Error('this page holds no profile');
        const data = JSON.parse(element.textContent) as { speedscope?: unknown; summary?: unknown; title?: unknown };
        const title = typeof data.title === 'string' ? data.title : 'profile';
        const flame = parseSpeedscope(JSON.stringify(data.speedscope), `${title}.speedscope.json`);
        const summary =
          data.summary == null ? undefined : parseProfileSummary(JSON.stringify(data.summary), `${title}.profile.json`);
        onLoad({ type: 'load', title: `Osprey: ${title}`, document: flame, summary });
      } catch (error) {
        onError((error as Error).message);
      }
    },
  };
}

export function detectHost(): Host {
  return typeof acquireVsCodeApi === 'function' ? editorHost(acquireVsCodeApi()) : pageHost();
}
