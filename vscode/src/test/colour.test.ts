import assert from 'node:assert/strict';
import { test } from 'node:test';
import { colourKey, compareFrames, frameColours, frameRanks, identityColour, RAMP, WAITING_COLOUR } from '../colour';
import type { Frame } from '../model';

/* Frames chosen to break weak orderings: shared file+name at several indices, no file at all,
 * a spliced-string collision, code-unit vs locale order. */
const frames: Frame[] = [
  { name: 'z', file: '/w/a b.osp' },
  { name: 'b.osp z', file: '/w/a' },
  { name: 'inlined', file: '/w/x.c', line: 10 },
  { name: 'runtime' },
  { name: 'inlined', file: '/w/x.c', line: 40 },
  { name: 'runtime' },
  { name: 'Zeta', file: '/w/x.c' },
  { name: 'alpha', file: '/w/x.c' },
  { name: 'éclair', file: '/w/x.c' },
  { name: 'f', file: '/w/x.c' },
  { name: '(waiting)' },
  { name: 'main', file: '' },
];
const indices = frames.map((_, index) => index);
const compare = (a: number, b: number) => compareFrames(frames, a, b);

test('the comparator is antisymmetric and answers 0 only for the same frame', () => {
  for (const a of indices) {
    for (const b of indices) {
      const ab = compare(a, b);
      assert.ok(Math.sign(ab) === -Math.sign(compare(b, a)), `antisymmetry fails for ${a}, ${b}`);
      assert.equal(ab === 0, a === b, `compare(${a}, ${b}) = ${ab}`);
    }
  }
});

test('the comparator is transitive', () => {
  for (const a of indices)
    for (const b of indices)
      for (const c of indices)
        if (compare(a, b) < 0 && compare(b, c) < 0) assert.ok(compare(a, c) < 0, `${a} < ${b} < ${c} but not ${a} < ${c}`);
});

test('frames sharing file and name are ordered by original index', () => {
  assert.ok(compare(2, 4) < 0 && compare(4, 2) > 0);
  assert.ok(compare(3, 5) < 0 && compare(5, 3) > 0);
});

test('file and name are ranked as a pair, never as a spliced string', () => {
  // ("/w/a b.osp", "z") vs ("/w/a", "b.osp z"): file "/w/a" < "/w/a b.osp", so frame 1 first,
  // whereas the spliced strings "/w/a b.osp z" are identical.
  assert.ok(compare(1, 0) < 0);
  assert.ok(compare(0, 1) > 0);
});

test('missing file sorts as the empty string, before every path', () => {
  assert.ok(compare(3, 0) < 0);
  assert.ok(compare(10, 2) < 0);
  // A missing file and an explicit "" are the same key; the name decides.
  assert.ok(compare(10, 11) < 0, '"(waiting)" < "main"');
});

test('strings compare by code unit, not by locale', () => {
  assert.ok(compare(6, 7) < 0, '"Zeta" < "alpha" in code units');
  assert.ok(compare(9, 8) < 0, '"f" < "éclair" in code units');
});

test('ranks are a permutation in comparator order', () => {
  const ranks = frameRanks(frames);
  assert.deepEqual([...ranks].sort((a, b) => a - b), indices);
  for (const a of indices) for (const b of indices) assert.equal(Math.sign(ranks[a] - ranks[b]), Math.sign(compare(a, b)));
});

test('a frame keeps its colour when the document lists frames in another order', () => {
  const distinct: Frame[] = [
    { name: 'main', file: '/w/m.c' },
    { name: 'worker', file: '/w/m.c' },
    { name: 'memcpy' },
    { name: 'hash', file: '/w/h.c' },
    { name: 'z', file: '/w/a b.osp' },
    { name: 'b.osp z', file: '/w/a' },
  ];
  const colourOf = (list: Frame[]) => {
    const colours = frameColours(list);
    return new Map(list.map((frame, index) => [`${frame.file ?? ''}\u0000${frame.name}`, colours[index]]));
  };
  const reference = colourOf(distinct);
  const reversed = colourOf([...distinct].reverse());
  const rotated = colourOf([...distinct.slice(2), ...distinct.slice(0, 2)]);
  assert.deepEqual(reversed, reference);
  assert.deepEqual(rotated, reference);
});

test('colours come from the fixed ramp; the waiting leaf is grey', () => {
  const colours = frameColours(frames);
  colours.forEach((colour, index) => {
    if (frames[index].name === '(waiting)') assert.equal(colour, WAITING_COLOUR);
    else assert.ok(RAMP.includes(colour), colour);
  });
  assert.deepEqual(frameColours(frames), colours);
});

test('the comparator stays a total order on many colliding frames (seeded samples)', () => {
  // Few files and names, so most frames collide on file, name or both; some have no file.
  let seed = 12345;
  const next = (bound: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % bound;
  };
  const files = [undefined, '', '/w/a', '/w/a b.osp', '/w/A', '/w/é.c'];
  const names = ['z', 'b.osp z', 'main', 'Main', 'mix', '(waiting)'];
  const many: Frame[] = Array.from({ length: 300 }, () => {
    const file = files[next(files.length)];
    return file === undefined ? { name: names[next(names.length)] } : { name: names[next(names.length)], file };
  });
  const order = (a: number, b: number) => compareFrames(many, a, b);
  for (let trial = 0; trial < 20000; trial++) {
    const a = next(many.length);
    const b = next(many.length);
    const c = next(many.length);
    assert.ok(Math.sign(order(a, b)) === -Math.sign(order(b, a)), `antisymmetry: ${a}, ${b}`);
    assert.equal(order(a, b) === 0, a === b, `equal only for the same frame: ${a}, ${b}`);
    if (order(a, b) <= 0 && order(b, c) <= 0) assert.ok(order(a, c) <= 0, `transitivity: ${a}, ${b}, ${c}`);
  }
  const ranks = frameRanks(many);
  assert.equal(new Set(ranks).size, many.length, 'every frame has its own rank');
});

test('a function keeps its colour across runs: other frames coming and going change nothing', () => {
  const hot: Frame = { name: 'checksum_block', file: '/work/a/examples/hotspot.c', line: 20 };
  const runA: Frame[] = [hot, { name: 'fill_block', file: '/work/a/examples/hotspot.c' }, { name: 'memcpy' }];
  const runB: Frame[] = [
    { name: 'clock_nanosleep', file: './time/clock_nanosleep.c' },
    { name: 'aaa', file: '/a.c' },
    { ...hot, line: 22 },
    { name: 'start_thread', file: './nptl/pthread_create.c' },
  ];
  // The same program checked out elsewhere: the folder does not matter, the file name does.
  const runC: Frame[] = [{ name: 'checksum_block', file: '/home/u/src/hotspot.c' }];
  const colour = identityColour(hot);
  assert.equal(frameColours(runA)[0], colour);
  assert.equal(frameColours(runB)[2], colour);
  assert.equal(frameColours(runC)[0], colour);
  // The identity is the (file name, name) pair, not a spliced string.
  assert.notEqual(colourKey({ name: 'z', file: '/w/a b' }), colourKey({ name: 'b z', file: '/w/a' }));
  assert.notEqual(colourKey({ name: 'f' }), colourKey({ name: 'f', file: '/w/f' }));
  // The ramp is used, not one colour for everything.
  const names = ['main', 'worker', 'hash_key', 'quicksort', 'partition', 'count_distinct', 'sieve', 'nap'];
  assert.ok(new Set(names.map((name) => identityColour({ name, file: '/w/mixed.c' }))).size >= 4);
});
