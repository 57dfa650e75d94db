/*
 * The two documents the extension reads, parsed and validated: `<stem>.speedscope.json` (the
 * flame graph: frames and, per fiber, root-first sampled stacks with weights) and
 * `<stem>.profile.json` (totals, fibers, hot functions and hot lines for the editor). Nothing
 * here touches the editor or the DOM, so the webview and the tests share it.
 *
 * Bad input raises ProfileFormatError whose message is one line naming the file and the
 * problem, e.g. `run.speedscope.json: profiles[0].samples[3][1]: frame index 9 out of range`.
 */

export interface Frame {
  name: string;
  /** Absolute path as the debug info gives it; undefined when unknown. */
  file?: string;
  /** 1-based; undefined when unknown. */
  line?: number;
  col?: number;
}

export interface SampledProfile {
  name: string;
  /** Root-first arrays of frame indices, one per sample, in recorded order. */
  samples: number[][];
  /** Milliseconds per sample, parallel to samples. */
  weights: number[];
}

export interface FlameDocument {
  name: string;
  exporter?: string;
  frames: Frame[];
  profiles: SampledProfile[];
  activeProfileIndex: number;
}

export interface Totals {
  wall_ms: number;
  cpu_ms: number;
  samples: number;
  on_cpu: number;
  waiting: number;
  rate_hz: number;
  dropped: number;
}

export interface FiberSummary {
  fiber: number;
  label: string;
  on_cpu: number;
  waiting: number;
}

export interface FunctionSummary {
  name: string;
  /** "" when unknown. */
  file: string;
  /** 0 when unknown. */
  line: number;
  self: number;
  total: number;
  self_pct: number;
  total_pct: number;
}

export interface LineSummary {
  file: string;
  line: number;
  samples: number;
  self: number;
  percent: number;
}

export interface ProfileSummary {
  version: 1;
  exe: string;
  pid: number;
  totals: Totals;
  fibers: FiberSummary[];
  functions: FunctionSummary[];
  lines: LineSummary[];
}

export class ProfileFormatError extends Error {
  constructor(fileName: string, problem: string) {
    super(`${fileName}: ${problem}`);
    this.name = 'ProfileFormatError';
  }
}

type Json = unknown;

function isObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/* A small cursor over a JSON value that names where it is, so every complaint can say
 * exactly which field is wrong. */
class Reader {
  constructor(
    private readonly fileName: string,
    readonly value: Json,
    readonly where: string,
  ) {}

  fail(problem: string): never {
    throw new ProfileFormatError(this.fileName, this.where ? `${this.where}: ${problem}` : problem);
  }

  private child(key: string | number, value: Json): Reader {
    const where =
      typeof key === 'number' ? `${this.where}[${key}]` : this.where ? `${this.where}.${key}` : key;
    return new Reader(this.fileName, value, where);
  }

  object(): Record<string, Json> {
    if (!isObject(this.value)) this.fail('expected an object');
    return this.value;
  }

  field(key: string): Reader {
    const object = this.object();
    if (!(key in object)) this.child(key, undefined).fail('missing');
    return this.child(key, object[key]);
  }

  optionalField(key: string): Reader | undefined {
    const object = this.object();
    if (object[key] === undefined) return undefined;
    return this.child(key, object[key]);
  }

  array(): Reader[] {
    if (!Array.isArray(this.value)) this.fail('expected an array');
    return this.value.map((item, index) => this.child(index, item));
  }

  string(): string {
    if (typeof this.value !== 'string') this.fail('expected a string');
    return this.value;
  }

  number(): number {
    if (typeof this.value !== 'number' || !Number.isFinite(this.value)) this.fail('expected a number');
    return this.value;
  }

  nonNegative(): number {
    const value = this.number();
    if (value < 0) this.fail(`expected a non-negative number, got ${value}`);
    return value;
  }

  integer(min: number): number {
    const value = this.number();
    if (!Number.isInteger(value) || value < min) this.fail(`expected an integer >= ${min}, got ${value}`);
    return value;
  }

  anyInteger(): number {
    const value = this.number();
    if (!Number.isInteger(value)) this.fail(`expected an integer, got ${value}`);
    return value;
  }
}

function parseJson(text: string, fileName: string): Json {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ProfileFormatError(fileName, `not valid JSON (${(error as Error).message})`);
  }
}

/* True when value is an array of integer frame indices in [0, frameCount). */
function isStack(value: Json, frameCount: number): value is number[] {
  if (!Array.isArray(value)) return false;
  for (const index of value) {
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= frameCount) return false;
  }
  return true;
}

/* speedscope allows other time units; everything downstream works in milliseconds. */
const MILLISECONDS_PER_UNIT: Record<string, number> = {
  nanoseconds: 1e-6,
  microseconds: 1e-3,
  milliseconds: 1,
  seconds: 1000,
};

/* Parses a speedscope file of "sampled" profiles (what the Osprey exporter writes).
 * Throws ProfileFormatError on anything the flame graph could not draw faithfully. */
export function parseSpeedscope(text: string, fileName: string): FlameDocument {
  const root = new Reader(fileName, parseJson(text, fileName), '');
  root.object();
  const frames = root
    .field('shared')
    .field('frames')
    .array()
    .map((frameReader): Frame => {
      const frame: Frame = { name: frameReader.field('name').string() };
      const file = frameReader.optionalField('file');
      if (file) frame.file = file.string();
      const line = frameReader.optionalField('line');
      if (line) frame.line = line.integer(1);
      const col = frameReader.optionalField('col');
      if (col) frame.col = col.integer(1);
      return frame;
    });

  const profileReaders = root.field('profiles').array();
  if (profileReaders.length === 0) root.field('profiles').fail('no profiles');
  const profiles = profileReaders.map((profileReader): SampledProfile => {
    const type = profileReader.field('type').string();
    if (type !== 'sampled')
      profileReader.field('type').fail(`"${type}" profiles are not supported (only "sampled")`);
    const unitReader = profileReader.field('unit');
    const scale = MILLISECONDS_PER_UNIT[unitReader.string()];
    if (scale === undefined) unitReader.fail(`unit "${unitReader.string()}" is not a time unit`);
    const samples = profileReader
      .field('samples')
      .array()
      .map((stackReader) => {
        // Fast path: profiles hold millions of indices; name the culprit only on failure.
        if (isStack(stackReader.value, frames.length)) return stackReader.value;
        return stackReader.array().map((indexReader) => {
          const index = indexReader.integer(0);
          if (index >= frames.length)
            indexReader.fail(`frame index ${index} out of range (${frames.length} frames)`);
          return index;
        });
      });
    const weightsReader = profileReader.field('weights');
    const weights = weightsReader.array().map((weight) => weight.nonNegative() * scale);
    if (weights.length !== samples.length)
      weightsReader.fail(`${weights.length} weights for ${samples.length} samples`);
    const nameReader = profileReader.optionalField('name');
    return { name: nameReader ? nameReader.string() : 'profile', samples, weights };
  });

  const activeReader = root.optionalField('activeProfileIndex');
  let activeProfileIndex = activeReader ? activeReader.integer(0) : 0;
  if (activeProfileIndex >= profiles.length) activeProfileIndex = 0;
  const nameReader = root.optionalField('name');
  const exporterReader = root.optionalField('exporter');
  return {
    name: nameReader ? nameReader.string() : '',
    exporter: exporterReader ? exporterReader.string() : undefined,
    frames,
    profiles,
    activeProfileIndex,
  };
}

/* Parses `<stem>.profile.json` (version 1). Unknown fields are ignored. */
export function parseProfileSummary(text: string, fileName: string): ProfileSummary {
  const root = new Reader(fileName, parseJson(text, fileName), '');
  root.object();
  const versionReader = root.field('version');
  const version = versionReader.integer(0);
  if (version !== 1) versionReader.fail(`unsupported version ${version} (expected 1)`);

  const totalsReader = root.field('totals');
  const totals: Totals = {
    wall_ms: totalsReader.field('wall_ms').nonNegative(),
    cpu_ms: totalsReader.field('cpu_ms').nonNegative(),
    samples: totalsReader.field('samples').integer(0),
    on_cpu: totalsReader.field('on_cpu').integer(0),
    waiting: totalsReader.field('waiting').integer(0),
    rate_hz: totalsReader.field('rate_hz').nonNegative(),
    dropped: totalsReader.field('dropped').integer(0),
  };
  const fibersReader = root.optionalField('fibers');
  const fibers = (fibersReader ? fibersReader.array() : []).map(
    (fiber): FiberSummary => ({
      fiber: fiber.field('fiber').anyInteger(),
      label: fiber.field('label').string(),
      on_cpu: fiber.field('on_cpu').integer(0),
      waiting: fiber.field('waiting').integer(0),
    }),
  );
  const functions = root
    .field('functions')
    .array()
    .map(
      (fn): FunctionSummary => ({
        name: fn.field('name').string(),
        file: fn.optionalField('file')?.string() ?? '',
        line: fn.optionalField('line')?.integer(0) ?? 0,
        self: fn.field('self').integer(0),
        total: fn.field('total').integer(0),
        self_pct: fn.field('self_pct').nonNegative(),
        total_pct: fn.field('total_pct').nonNegative(),
      }),
    );
  const lines = root
    .field('lines')
    .array()
    .map(
      (line): LineSummary => ({
        file: line.field('file').string(),
        line: line.field('line').integer(1),
        samples: line.field('samples').integer(0),
        self: line.field('self').integer(0),
        percent: line.field('percent').nonNegative(),
      }),
    );
  const pidReader = root.optionalField('pid');
  return {
    version: 1,
    exe: root.optionalField('exe')?.string() ?? '',
    pid: pidReader ? pidReader.integer(0) : 0,
    totals,
    fibers,
    functions,
    lines,
  };
}

const SPEEDSCOPE_SUFFIX = '.speedscope.json';
const SUMMARY_SUFFIX = '.profile.json';

/* `<stem>.speedscope.json` → `<stem>.profile.json`; undefined when the name is not a stem's. */
export function siblingSummaryPath(speedscopePath: string): string | undefined {
  if (!speedscopePath.endsWith(SPEEDSCOPE_SUFFIX)) return undefined;
  return speedscopePath.slice(0, -SPEEDSCOPE_SUFFIX.length) + SUMMARY_SUFFIX;
}

/* The flame-graph file for a path the user picked: itself, or for `<stem>.profile.json` its
 * sibling `<stem>.speedscope.json`. */
export function speedscopePathFor(chosenPath: string): string {
  if (!chosenPath.endsWith(SUMMARY_SUFFIX)) return chosenPath;
  return chosenPath.slice(0, -SUMMARY_SUFFIX.length) + SPEEDSCOPE_SUFFIX;
}
