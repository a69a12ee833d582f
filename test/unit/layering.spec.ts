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

  it('fails config/ importing a feature, and observability/ importing the callback', () => {
    const dir = tree({
      'src/config/probe.ts':
        "import { walletConfig } from '../wallet/wallet.config.js';\nexport const x = walletConfig;\n",
      'src/wallet/wallet.config.ts': 'export const walletConfig = 1;\n',
      'src/observability/probe.ts':
        "import type { CallbackRequest } from '../callbacks/callback-request.js';\nexport type X = CallbackRequest;\n",
      'src/callbacks/callback-request.ts': 'export interface CallbackRequest { id: string }\n',
    });
    made.push(dir);
    expect(cruise(dir, ['src'])).toEqual({ status: 2, rules: ['layer-config', 'layer-observability'] });
  }, 120_000);

  it("fails an example that imports past src/extensions.ts; passes one that doesn't", () => {
    const dir = tree({
      'examples/bad.ts':
        "import { OutboxWorker } from '../src/outbox/outbox.worker.js';\nexport const x = OutboxWorker;\n",
      'examples/good.ts':
        "import { SettlementHook } from '../src/extensions.js';\nexport const y = SettlementHook;\n",
      'src/outbox/outbox.worker.ts': 'export class OutboxWorker {}\n',
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
      'src/database/entities.ts':
        "import { A } from '../wallet/entities/a.entity.js';\nimport { B } from '../wallet/wallet.service.js';\nexport const E = [A, B];\n",
      'src/wallet/entities/a.entity.ts': 'export class A {}\n',
      'src/wallet/wallet.service.ts': 'export class B {}\n',
    });
    made.push(dir);
    expect(cruise(dir, ['src'])).toEqual({ status: 1, rules: ['allowed-0-stays-narrow'] });
  }, 120_000);

  it('fails the console importing src/, a value or a type; passes its own and generated modules', () => {
    const dir = tree({
      'console/src/screens/Bad.tsx':
        "import { KINDS } from '../../../src/operator-actions/kinds';\nexport const Bad = () => <p>{KINDS.length}</p>;\n",
      'console/src/only-types.ts':
        "import type { Kind } from '../../src/operator-actions/kinds';\nexport type K = Kind;\n",
      'console/src/screens/Good.tsx':
        "import { kindValues } from '../api.gen';\nexport const Good = () => <p>{kindValues.length}</p>;\n",
      'console/src/api.gen.ts': "export const kindValues = ['a'] as const;\n",
      'src/operator-actions/kinds.ts': "export const KINDS = ['a'];\nexport type Kind = 'a';\n",
    });
    made.push(dir);
    expect(cruise(dir, ['src', 'console'])).toEqual({
      status: 2,
      rules: ['console-is-a-client', 'console-is-a-client'],
    });
  }, 120_000);
});
