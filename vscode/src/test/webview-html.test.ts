import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFromWebview } from '../protocol';
import { contentSecurityPolicy, makeNonce, renderWebviewHtml } from '../webviewHtml';

const options = { cspSource: 'https://file+.vscode-resource.test', nonce: 'abc123XYZ', scriptUri: 'https://r.test/flamegraph.js' };

test('the policy allows nothing by default and only the nonced script', () => {
  const policy = contentSecurityPolicy(options);
  assert.match(policy, /^default-src 'none'; /);
  assert.match(policy, /script-src 'nonce-abc123XYZ'(;|$)/);
  assert.match(policy, /style-src https:\/\/file\+\.vscode-resource\.test 'nonce-abc123XYZ'/);
  assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval/);
});

test('every script and style element carries the nonce', () => {
  const html = renderWebviewHtml(options);
  assert.ok(html.includes(`content="${contentSecurityPolicy(options).replace(/'/g, '&#39;')}"`));
  const scripts = html.match(/<script\b[^>]*>/g) ?? [];
  const styles = html.match(/<style\b[^>]*>/g) ?? [];
  assert.equal(scripts.length, 1);
  assert.ok(styles.length >= 1);
  for (const tag of [...scripts, ...styles]) assert.match(tag, /nonce="abc123XYZ"/);
  assert.match(scripts[0], /src="https:\/\/r\.test\/flamegraph\.js"/);
  assert.doesNotMatch(html, /\son[a-z]+=/, 'no inline event handlers');
  assert.doesNotMatch(html, /\sstyle="/, 'no style attributes');
});

test('nonces are fresh and safe to embed', () => {
  const nonces = new Set(Array.from({ length: 50 }, makeNonce));
  assert.equal(nonces.size, 50);
  for (const nonce of nonces) assert.match(nonce, /^[A-Za-z0-9]{16,}$/);
});

test('messages from the webview are validated', () => {
  assert.deepEqual(parseFromWebview({ type: 'ready' }), { type: 'ready' });
  assert.deepEqual(parseFromWebview({ type: 'openSource', file: '/w/a.c', line: 3, extra: 1 }), {
    type: 'openSource',
    file: '/w/a.c',
    line: 3,
  });
  assert.equal(parseFromWebview({ type: 'openSource', file: '', line: 3 }), undefined);
  assert.equal(parseFromWebview({ type: 'openSource', file: '/w/a.c', line: 0 }), undefined);
  assert.equal(parseFromWebview({ type: 'openSource', file: '/w/a.c', line: 1.5 }), undefined);
  assert.equal(parseFromWebview({ type: 'other' }), undefined);
  assert.equal(parseFromWebview(null), undefined);
});
