import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// Issue 29, item 5 (docs/operating.md, "Operator commands"): an operator's npm script runs the
// built code in dist/ and never builds it: a build replaces dist/'s files (scripts/build.js;
// before, `nest build` deleted dist/ first), and a process that starts from dist/ meanwhile (a
// receiver, the simulator, the stand-in wallet) may load a mix of two builds. Only the
// developer's scripts build.

const ROOT = process.cwd();
const RUN_BUILT = resolve(ROOT, 'scripts/run-built.js');
const { scripts, exports: exported } = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  exports: unknown;
};

describe('npm scripts', () => {
  it("an operator's command runs dist/ through scripts/run-built.js and builds nothing", () => {
    expect({
      'start:prod': scripts['start:prod'],
      'migration:run': scripts['migration:run'],
      'ledger:verify': scripts['ledger:verify'],
      'wallet:reconcile': scripts['wallet:reconcile'],
      'wallet:certify': scripts['wallet:certify'],
      retention: scripts.retention,
      sportapi: scripts.sportapi,
    }).toEqual({
      'start:prod':
        'exec node --max-semi-space-size=64 --import=./scripts/tracing.js scripts/run-built.js dist/src/main.js',
      'migration:run': 'exec node scripts/run-built.js dist/src/platform/database/migrate-cli.js',
      'ledger:verify': 'exec node scripts/run-built.js dist/src/core/ledger/verify-cli.js',
      'wallet:reconcile': 'exec node scripts/run-built.js dist/src/outbound/wallet/wallet-reconcile-cli.js',
      'wallet:certify': 'exec node scripts/run-built.js dist/src/outbound/wallet/wallet-certify-cli.js',
      retention: 'exec node scripts/run-built.js dist/src/operations/retention/retention-cli.js',
      sportapi: 'exec node scripts/run-built.js dist/sim/cli.js',
    });
  });

  it('only the build itself and the developer’s scripts build (they replace dist/)', () => {
    const building = Object.entries(scripts)
      .filter(([, script]) => /\bnpm run build\b|\bnest (build|start)\b|scripts\/build\.js/.test(script))
      .map(([name]) => name)
      .sort();
    expect(building).toEqual([
      'bench',
      'bench:console',
      'bench:events',
      'bench:latency',
      'bench:open',
      'bench:retention',
      'bench:topology',
      'build',
      'openapi',
      'prestart',
      'start:dev',
      'test:reliability',
    ]);
  });
});

// New-user report 2, finding 2 (docs/extending.md, "Your own module, outside this repository"):
// the package exports the extension API, built with its declarations, and nothing else
// (test/reliability/partner-package.spec.ts installs, compiles and runs a package that uses it).
describe('package exports', () => {
  it('sportapi-settlement-receiver/extensions is the built src/extensions.ts with its types', () => {
    expect(exported).toEqual({
      './extensions': { types: './dist/src/extensions.d.ts', default: './dist/src/extensions.js' },
      './package.json': './package.json',
    });
    const build = JSON.parse(readFileSync(resolve(ROOT, 'tsconfig.build.json'), 'utf8')) as {
      compilerOptions: { declaration?: boolean };
      include: string[];
    };
    expect({
      declaration: build.compilerOptions.declaration,
      src: build.include.includes('src/**/*.ts'),
    }).toEqual({
      declaration: true,
      src: true,
    });
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
    // A checkout with a dist/ of its own (a fresh clone has none until npm run build).
    const built = join(dir, 'built');
    mkdirSync(join(built, 'dist'), { recursive: true });
    const missing = run(['dist/src/no-such-cli.js'], built);
    expect({ status: missing.status, stdout: missing.stdout, stderr: missing.stderr }).toEqual({
      status: 2,
      stdout: '',
      stderr:
        'dist/src/no-such-cli.js is missing: run npm run build first (this command runs the built code in dist/ and never builds it)\n',
    });
    const noDist = run(['dist/src/core/ledger/verify-cli.js'], dir);
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

// New-user report 2, finding 4: SIGTERM to the npm process of an operator's command (a
// supervisor, a script's `kill`) reaches the command itself (`exec node …`), as for `npm start`;
// before, `sh -c` died and left, e.g., the stand-in wallet running with its port taken.
describe('SIGTERM to npm run <operator command>', () => {
  const commands = [
    'start:prod',
    'migration:run',
    'ledger:verify',
    'wallet:reconcile',
    'wallet:certify',
    'sportapi',
  ];
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'npm-signal-'));
    const only = Object.fromEntries(commands.map((name) => [name, scripts[name]]));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', scripts: only }));
    mkdirSync(join(dir, 'scripts'));
    copyFileSync(RUN_BUILT, join(dir, 'scripts/run-built.js'));
    // start:prod preloads the traces' set-up, which does nothing without dist/src/tracing.js.
    copyFileSync(RUN_BUILT.replace(/run-built\.js$/, 'tracing.js'), join(dir, 'scripts/tracing.js'));
    // Each built file is a stand-in that writes its pid and runs until a signal stops it.
    for (const name of commands) {
      const file = join(dir, /dist\/\S+\.js/.exec(scripts[name])![0]);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(
        file,
        "import { writeFileSync } from 'node:fs';\n" +
          'writeFileSync(process.env.PID_FILE, String(process.pid));\n' +
          'setInterval(() => undefined, 1000);\n',
      );
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Whether `pid` runs (a zombie does not). */
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
    } catch {
      return false;
    }
    const stat = `/proc/${pid}/stat`;
    return !existsSync(stat) || !/\) Z /.test(readFileSync(stat, 'utf8'));
  };
  const until = async (what: () => boolean, ms = 15_000): Promise<boolean> => {
    for (const end = Date.now() + ms; Date.now() < end;) {
      if (what()) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return what();
  };

  it.each(commands)(
    'npm run %s: the command stops with npm',
    async (name) => {
      const pidFile = join(dir, `${name.replace(':', '-')}.pid`);
      const npm = spawn('npm', ['run', '--silent', name, '--', 'wallet', '--port', '0'], {
        cwd: dir,
        env: { ...process.env, PID_FILE: pidFile, npm_config_update_notifier: 'false' },
        stdio: 'ignore',
      });
      const exited = new Promise<void>((r) => npm.once('exit', () => r()));
      try {
        expect(await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '')).toBe(true);
        const pid = Number(readFileSync(pidFile, 'utf8'));
        expect(alive(pid)).toBe(true);
        npm.kill('SIGTERM');
        await exited;
        expect(await until(() => !alive(pid), 5_000)).toBe(true);
      } finally {
        if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
        if (existsSync(pidFile)) {
          const pid = Number(readFileSync(pidFile, 'utf8'));
          if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
        }
      }
    },
    30_000,
  );
});
