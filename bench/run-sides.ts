/** The sides of `npm run bench`: the receiver or the baseline as child processes, the stand-in wallet, their clean-up. */
import { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type { WalletStats } from '../sim/wallet.js';
import { EmbeddedPostgresServer } from '../src/platform/database/embedded-postgres.js';
import { Feed, LoadGenerator } from './load.js';
import { startChild as startLoggedChild, stopChild } from './processes.js';
import { reachable } from './setup.js';
import {
  args,
  BASELINE_ENTRY,
  LOG_DIR,
  OPS_KEY,
  PORT_BASE,
  ProfileSpec,
  RECEIVER_ENTRY,
  RECEIVER_NODE_FLAGS,
  RECEIVER_ROOT,
  ROOT,
  SECRET,
  SIM_CLI,
  WALLET_SECRET,
} from './run-options.js';

export type SideName = 'receiver' | 'baseline' | 'inbox';

/** A child process of this one that the bench stops at the end (or on a signal). */
export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Starts `node <nodeArgs>` (with the `--profile` flags), its output to `.data/bench/<logName>.log`
 * (appended to with `append`), and waits until `probe` answers anything (at most 90 s).
 */
export function startChild(
  name: string,
  nodeArgs: string[],
  env: NodeJS.ProcessEnv,
  logName: string,
  append: boolean,
  probe: string,
  cwd = ROOT,
): Promise<ChildProcess> {
  return startLoggedChild(name, nodeArgs, env, probe, {
    cwd,
    logPath: resolve(LOG_DIR, `${logName}.log`),
    append,
    probeHeaders: { authorization: `Bearer ${OPS_KEY}` },
    cpuProfileDir: args.profile ? resolve(LOG_DIR, 'profile') : undefined,
  });
}

/** A server under test: a child process of this one. */
export class Side implements Stoppable {
  child: ChildProcess | undefined;
  feed: Feed;
  bestRate = 0;

  /**
   * @param name `inbox` is the receiver started with `CALLBACK_MODE=inbox` and `extraEnv`.
   * @param label its name in the per-run lines (the wallet run's sides say so).
   */
  constructor(
    readonly name: SideName,
    readonly port: number,
    readonly dbUrl: string,
    batchPrefix: string,
    profile: ProfileSpec,
    private readonly extraEnv: Record<string, string> = {},
    readonly label: string = name,
  ) {
    this.feed = new Feed(
      new LoadGenerator({ pool: profile.pool, secret: SECRET, batchPrefix, profile: profile.key }),
    );
  }

  get pid(): number {
    return this.child?.pid as number;
  }

  /** Starts the server, its output to `.data/bench/<logName>.log` (appended to with `append`). */
  async start(logName: string, append = false): Promise<void> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: this.dbUrl,
      SPORTAPI_WEBHOOK_SECRETS: SECRET,
      OPS_API_KEYS: OPS_KEY,
      PORT: String(this.port),
      HOST: '127.0.0.1',
      ...(this.name === 'inbox' ? { CALLBACK_MODE: 'inbox' } : {}),
      ...this.extraEnv,
    };
    delete env.TEST_DATABASE_URL;
    const nodeArgs = this.name === 'baseline' ? [BASELINE_ENTRY] : [...RECEIVER_NODE_FLAGS, RECEIVER_ENTRY];
    const probe = this.name === 'baseline' ? '/health' : '/accounts/bench-probe';
    this.child = await startChild(
      this.label,
      nodeArgs,
      env,
      logName,
      append,
      `http://127.0.0.1:${this.port}${probe}`,
      this.name === 'baseline' ? ROOT : RECEIVER_ROOT,
    );
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

/** The stand-in wallet (sim/wallet.ts, `npm run sportapi -- wallet`) as a child process of this one. */
export class StandInWallet implements Stoppable {
  private child: ChildProcess | undefined;

  constructor(readonly port: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(logName: string): Promise<void> {
    const argv = ['wallet', '--port', String(this.port), '--host', '127.0.0.1', '--secret', WALLET_SECRET];
    this.child = await startChild(
      'stand-in wallet',
      [SIM_CLI, ...argv],
      process.env,
      logName,
      false,
      `${this.url}/stats`,
    );
  }

  /** Its counters (`GET /stats`). */
  async stats(): Promise<WalletStats> {
    return (await (await fetch(`${this.url}/stats`)).json()) as WalletStats;
  }

  /** The transaction id of every transaction it applied (`GET /transactions`). */
  async transactionIds(): Promise<string[]> {
    const body = (await (await fetch(`${this.url}/transactions`)).json()) as {
      transactions: { transactionId: string }[];
    };
    return body.transactions.map((t) => t.transactionId);
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

export const children: Stoppable[] = [];
export let embedded: EmbeddedPostgresServer | undefined;

export async function cleanup(): Promise<void> {
  await Promise.all(children.map((s) => s.stop().catch(() => undefined)));
  await embedded?.stop().catch(() => undefined);
}

/** The PostgreSQL server to use: --database-url, the local service, or an embedded one. */
export async function serverUrl(): Promise<string> {
  if (args['database-url']) {
    const url = args['database-url'] as string;
    if (!(await reachable(url))) throw new Error(`--database-url ${url} cannot be reached`);
    console.log(`PostgreSQL: ${new URL(url).host} (--database-url)`);
    return url;
  }
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!args.embedded && (await reachable(local))) {
    console.log('PostgreSQL: the local service at 127.0.0.1:5432 (--embedded to use an embedded one)');
    return local;
  }
  console.log(
    `${args.embedded ? '--embedded' : 'no PostgreSQL at 127.0.0.1:5432'}: ` +
      `starting an embedded one on port ${PORT_BASE + 90} (as npm start does)`,
  );
  embedded = new EmbeddedPostgresServer(
    {
      dataDir: '.data/bench-postgres',
      checkoutDir: ROOT,
      clustersDir: process.env.EMBEDDED_PG_CLUSTERS_DIR || undefined,
      port: PORT_BASE + 90,
      database: 'postgres',
    },
    { log: (m) => console.log(m), warn: (m) => console.warn(m) },
  );
  return embedded.start();
}
