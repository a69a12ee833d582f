import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// Issue 29, item 5 (docs/operating.md, "Operator commands"): an operator's npm script runs the
// built code in dist/ and never builds it: `nest build` deletes dist/ first, and every process
// that starts from dist/ meanwhile (a receiver, the simulator, the stand-in wallet) fails. Only
// the developer's scripts build.

const ROOT = process.cwd();
const RUN_BUILT = resolve(ROOT, 'scripts/run-built.js');
const { scripts } = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
};

describe('npm scripts', () => {
  it("an operator's command runs dist/ through scripts/run-built.js and builds nothing", () => {
    expect({
      'start:prod': scripts['start:prod'],
      'migration:run': scripts['migration:run'],
      'ledger:verify': scripts['ledger:verify'],
      'wallet:reconcile': scripts['wallet:reconcile'],
      retention: scripts.retention,
      sportapi: scripts.sportapi,
    }).toEqual({
      'start:prod': 'exec node --max-semi-space-size=64 scripts/run-built.js dist/src/main.js',
      'migration:run': 'node scripts/run-built.js dist/src/database/migrate-cli.js',
      'ledger:verify': 'node scripts/run-built.js dist/src/ledger/verify-cli.js',
      'wallet:reconcile': 'node scripts/run-built.js dist/src/wallet/wallet-reconcile-cli.js',
      retention: 'node scripts/run-built.js dist/src/retention/retention-cli.js',
      sportapi: 'node scripts/run-built.js dist/sim/cli.js',
    });
  });

  it('only the build itself and the developer’s scripts build (they replace dist/)', () => {
    const building = Object.entries(scripts)
      .filter(([, script]) => /\bnpm run build\b|\bnest (build|start)\b/.test(script))
      .map(([name]) => name)
      .sort();
    expect(building).toEqual([
      'bench',
      'bench:console',
      'bench:events',
      'bench:latency',
      'bench:open',
      'bench:retention',
      'build',
      'openapi',
      'prestart',
      'start:dev',
      'test:reliability',
    ]);
  });
});

describe('scripts/run-built.js', () => {
  const run = (args: string[], cwd = ROOT) =>
    spawnSync(process.execPath, [RUN_BUILT, ...args], { cwd, encoding: 'utf8', timeout: 20_000 });
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'run-built-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a missing file: one line naming npm run build, exit code 2', () => {
    const missing = run(['dist/src/no-such-cli.js']);
    expect({ status: missing.status, stdout: missing.stdout, stderr: missing.stderr }).toEqual({
      status: 2,
      stdout: '',
      stderr:
        'dist/src/no-such-cli.js is missing: run npm run build first (this command runs the built code in dist/ and never builds it)\n',
    });
    const noDist = run(['dist/src/ledger/verify-cli.js'], dir);
    expect({ status: noDist.status, stderr: noDist.stderr }).toEqual({
      status: 2,
      stderr:
        'dist/ is missing: run npm run build first (this command runs the built code in dist/ and never builds it)\n',
    });
  });

  it('runs the file as node would: its arguments, its exit code', () => {
    writeFileSync(
      join(dir, 'cli.js'),
      'process.stdout.write(JSON.stringify(process.argv.slice(1)));\nprocess.exitCode = 3;\n',
    );
    const ran = run(['cli.js', '--wallet-url', 'http://w', 'x'], dir);
    expect({ status: ran.status, stdout: JSON.parse(ran.stdout) as string[], stderr: ran.stderr }).toEqual({
      status: 3,
      stdout: [join(dir, 'cli.js'), '--wallet-url', 'http://w', 'x'],
      stderr: '',
    });
  });
});
