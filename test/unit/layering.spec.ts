import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

// The layering rule of CI (.dependency-cruiser.cjs, `npm run lint:layers`; docs/architecture.md,
// "Layers"): the repository passes it, and it fails an import that runs up a layer, an example
// that reaches past the extension API, the console reaching into src/, and passes the one
// allowed upward import.

const ROOT = process.cwd();
const CONFIG = resolve(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = resolve(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');

/** Runs the rule over `dirs` of `cwd`: exit status and the violations' rule names. */
function cruise(cwd: string, dirs: string[]): { status: number | null; rules: string[] } {
  // The `err` report, as `npm run lint:layers` prints it: one `error <rule>: from → to` per violation.
  const run = spawnSync(process.execPath, [DEPCRUISE, ...dirs, '--config', CONFIG, '--output-type', 'err'], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
  });
  const rules = [...run.stdout.matchAll(/^\s*error (\S+):/gm)].map((m) => m[1]).sort();
  return { status: run.status, rules };
}

/** The schema's entity list: it imports every feature's entities (TypeORM needs them all). */
const ENTITY_LIST = 'src/platform/database/entities.ts';

/**
 * The cycles between feature folders (`src/<wing>/<feature>`; the app's own files are `src`) that
 * the imports of src/ make, the entity list's aside: each cycle's folders, sorted.
 */
function featureCycles(cwd: string): string[][] {
  const run = spawnSync(process.execPath, [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', 'json'], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
    maxBuffer: 256 * 1024 * 1024,
  });
  const { modules } = JSON.parse(run.stdout) as {
    modules: { source: string; dependencies: { resolved: string }[] }[];
  };
  const feature = (path: string) =>
    path.split('/').length <= 2 ? 'src' : path.split('/').slice(0, 3).join('/');
  const edges = new Map<string, Set<string>>();
  for (const m of modules) {
    if (!m.source.startsWith('src/') || m.source === ENTITY_LIST) continue;
    for (const d of m.dependencies) {
      const [from, to] = [feature(m.source), feature(d.resolved)];
      if (!d.resolved.startsWith('src/') || from === to) continue;
      edges.set(from, (edges.get(from) ?? new Set()).add(to));
    }
  }
  // Strongly connected components of more than one folder (Tarjan's algorithm).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) visit(w);
      if (stack.includes(w)) low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const component = stack.splice(stack.indexOf(v));
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

/** A scratch tree holding `files` (path → source) and a tsconfig like the repository's. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'layering-'));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'ES2023' },
    }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe('the layering rule (dependency-cruiser)', () => {
  const made: string[] = [];
  afterAll(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('passes the repository: no import runs up a layer', () => {
    expect(cruise(ROOT, ['src', 'examples', 'console'])).toEqual({ status: 0, rules: [] });
  }, 120_000);

  it('finds no cycle between the feature folders of src/ (the entity list aside)', () => {
    expect(featureCycles(ROOT)).toEqual([]);
  }, 120_000);

  it('finds a cycle between two feature folders', () => {
    const dir = tree({
      'src/core/coupons/a.ts': "import { b } from '../settlement/b.js';\nexport const a = () => b;\n",
      'src/core/settlement/b.ts': "import { a } from '../coupons/a.js';\nexport const b = () => a;\n",
    });
    made.push(dir);
    expect(featureCycles(dir)).toEqual([['src/core/coupons', 'src/core/settlement']]);
  }, 120_000);

  it('fails config/ importing a feature, and observability/ importing the callback', () => {
    const dir = tree({
      'src/platform/config/probe.ts':
        "import { walletConfig } from '../../outbound/wallet/wallet.config.js';\nexport const x = walletConfig;\n",
      'src/outbound/wallet/wallet.config.ts': 'export const walletConfig = 1;\n',
      'src/platform/observability/probe.ts':
        "import type { CallbackRequest } from '../../intake/callbacks/callback-request.js';\nexport type X = CallbackRequest;\n",
      'src/intake/callbacks/callback-request.ts': 'export interface CallbackRequest { id: string }\n',
    });
    made.push(dir);
    expect(cruise(dir, ['src'])).toEqual({ status: 2, rules: ['layer-config', 'layer-observability'] });
  }, 120_000);

  it("fails an example that imports past src/extensions.ts; passes one that doesn't", () => {
    const dir = tree({
      'examples/bad.ts':
        "import { OutboxWorker } from '../src/outbound/outbox/outbox.worker.js';\nexport const x = OutboxWorker;\n",
      'examples/good.ts':
        "import { SettlementHook } from '../src/extensions.js';\nexport const y = SettlementHook;\n",
      'src/outbound/outbox/outbox.worker.ts': 'export class OutboxWorker {}\n',
      'src/extensions.ts': 'export class SettlementHook {}\n',
    });
    made.push(dir);
    expect(cruise(dir, ['src', 'examples'])).toEqual({
      status: 1,
      rules: ['examples-use-the-extension-api'],
    });
  }, 120_000);

  it("passes the schema's entity list, and nothing else it would import from above", () => {
    const dir = tree({
      'src/platform/database/entities.ts':
        "import { A } from '../../outbound/wallet/entities/a.entity.js';\nimport { B } from '../../outbound/wallet/wallet.service.js';\nexport const E = [A, B];\n",
      'src/outbound/wallet/entities/a.entity.ts': 'export class A {}\n',
      'src/outbound/wallet/wallet.service.ts': 'export class B {}\n',
    });
    made.push(dir);
    expect(cruise(dir, ['src'])).toEqual({ status: 1, rules: ['allowed-0-stays-narrow'] });
  }, 120_000);

  it('fails the console importing src/, a value or a type; passes its own and generated modules', () => {
    const dir = tree({
      'console/src/screens/Bad.tsx':
        "import { KINDS } from '../../../src/platform/operator-actions/kinds';\nexport const Bad = () => <p>{KINDS.length}</p>;\n",
      'console/src/only-types.ts':
        "import type { Kind } from '../../src/platform/operator-actions/kinds';\nexport type K = Kind;\n",
      'console/src/screens/Good.tsx':
        "import { kindValues } from '../api.gen';\nexport const Good = () => <p>{kindValues.length}</p>;\n",
      'console/src/api.gen.ts': "export const kindValues = ['a'] as const;\n",
      'src/platform/operator-actions/kinds.ts': "export const KINDS = ['a'];\nexport type Kind = 'a';\n",
    });
    made.push(dir);
    expect(cruise(dir, ['src', 'console'])).toEqual({
      status: 2,
      rules: ['console-is-a-client', 'console-is-a-client'],
    });
  }, 120_000);
});
