/** `npm run bench`'s options and constants: the profiles, ports, durations, the receiver build to run (bench/run.ts). */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_WALLET_OPERATION_TYPES } from '../src/outbound/wallet/wallet.config.js';
import { LoadProfile, PoolSpec } from './load.js';
import type { MeasureOptions } from './run-load.js';
import { startScriptNodeFlags } from './processes.js';

export const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    large: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    duration: { type: 'string' },
    concurrency: { type: 'string' },
    'port-base': { type: 'string', default: '4100' },
    'pool-coupons': { type: 'string' },
    players: { type: 'string', default: '200' },
    profiles: { type: 'string', default: 'mixed,money' },
    'money-coupons': { type: 'string' },
    'money-players': { type: 'string', default: '1000' },
    'no-inbox': { type: 'boolean', default: false },
    'inbox-env': { type: 'string' },
    'drain-timeout': { type: 'string', default: '120' },
    wallet: { type: 'boolean', default: false },
    'wallet-env': { type: 'string' },
    'sample-ms': { type: 'string', default: '25' },
    'baseline-pool-size': { type: 'string', default: '16' },
    'keep-databases': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    slices: { type: 'string' },
    embedded: { type: 'boolean', default: false },
    'db-prefix': { type: 'string', default: 'bench' },
    'receiver-build': { type: 'string' },
    tracing: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

/** The options, as `--help` prints them. */
export const HELP = `npm run bench [-- options]: the receiver against a raw node:http + pg baseline (bench/RESULTS.md)
  --quick                 10 s per run (default 30 s), one slice
  --large                 then again on databases preloaded with 1 M coupons / 5 M bets
  --duration S            seconds per side and concurrency
  --concurrency 1,8,32    concurrencies to run (the ratio lines use 8 when present)
  --slices N              each run split into N interleaved slices (3; 1 with --quick)
  --profiles mixed,money  load profiles, in this order: mixed (today's mix, about 8 financial
                          operations per batch) and money (money-heavy, about 35 per batch)
  --pool-coupons N        mixed: registered coupons (6400; 4000 with --quick); --players N (200)
  --money-coupons N       money: registered coupons (10000; 5000 with --quick); --money-players N (1000)
  --no-inbox              skip the inbox-mode run after the money profile's inline runs
  --inbox-env K=V,...     extra environment of the inbox-mode receiver (default inbox settings),
                          e.g. INBOX_CONCURRENCY=8,INBOX_POLL_INTERVAL_MS=50
  --drain-timeout S       seconds to wait for the inbox (or the wallet outbox) to drain after a load (120)
  --wallet                then the wallet run (opt-in: its drains take minutes): the money profile
                          again at c=8 (or at --concurrency when given) against a receiver with the
                          http connector to the stand-in wallet (sim/wallet.ts, port base + 6) and a
                          baseline inserting the same wallet_outbox rows (never delivering them);
                          prints the ratio, drain rates, backlog and age, and checks the stand-in
                          applied every outbox row once (exit 1 if not)
  --wallet-env K=V,...    extra environment of the wallet run's receiver, e.g. WALLET_CONCURRENCY=4
  --sample-ms N           pg_stat_activity sampling interval for the wait figures (25; 0: off)
  --database-url URL      a PostgreSQL where databases can be created (default the local service,
                          else an embedded server); --embedded forces the embedded one
  --db-prefix P           databases P_template, P_receiver, P_baseline, P_inbox, P_wallet_receiver,
                          P_wallet_baseline (bench)
  --port-base N           receiver N+1, baseline N+2, inbox receiver N+3, wallet receiver N+4,
                          wallet baseline N+5, stand-in wallet N+6, embedded PostgreSQL N+90 (4100)
  --baseline-pool-size N  the baseline's connections (16)
  --receiver-build DIR    run the receiver built in DIR (a built checkout, e.g. a worktree of an
                          earlier commit: its dist/src/main.js with its start script's node flags)
                          on a database it migrates itself, to measure before and after against
                          the same baseline; not with --large or --wallet
  --tracing               the receivers with OpenTelemetry on (OTEL_EXPORTER_OTLP_ENDPOINT), exporting
                          over OTLP/HTTP to a local sink that counts and discards (issue 41)
  --keep-databases        keep the databases; --profile  CPU profiles under .data/bench/profile
                          (runs sharing a PostgreSQL need distinct --db-prefix and --port-base)`;

if (args.help) {
  console.log(HELP);
  process.exit(0);
}

export const QUICK = args.quick as boolean;
export const DURATION = Number(args.duration ?? (QUICK ? 10 : 30));
/** Each side's DURATION at one concurrency is split in this many interleaved slices. */
export const SLICES = Number(args.slices ?? (QUICK ? 1 : 3));
export const CONCURRENCY = ((args.concurrency as string | undefined) ?? '1,8,32').split(',').map(Number);
export const PORT_BASE = Number(args['port-base']);
export const RATIO_CONCURRENCY = CONCURRENCY.includes(8) ? 8 : CONCURRENCY[0];
export { OPS_KEY, SECRET, WALLET_SECRET } from './credentials.js';
export const ROOT = process.cwd();
/** The checkout whose receiver runs: this one, or `--receiver-build`'s. */
export const RECEIVER_BUILD = args['receiver-build'] ? resolve(args['receiver-build']) : undefined;
export const RECEIVER_ROOT = RECEIVER_BUILD ?? ROOT;
export const RECEIVER_ENTRY = RECEIVER_BUILD
  ? resolve(RECEIVER_BUILD, 'dist/src/main.js')
  : fileURLToPath(new URL('../src/main.js', import.meta.url));
/** Node's flags in package.json's `start` script (`exec node <flags> dist/src/main.js`), as `npm start` runs it. */
export const RECEIVER_NODE_FLAGS = startScriptNodeFlags(
  (JSON.parse(readFileSync(resolve(RECEIVER_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
    .scripts.start,
);
export const BASELINE_ENTRY = fileURLToPath(new URL('./baseline-server.js', import.meta.url));
export const SIM_CLI = fileURLToPath(new URL('../sim/cli.js', import.meta.url));
export const LOG_DIR = resolve(ROOT, '.data', 'bench');
/** Interval of the pg_stat_activity sampler, ms (0: no wait figures). */
export const SAMPLE_MS = Number(args['sample-ms']);
/** How each concurrency is measured (`measureConcurrency`): DURATION s per side in SLICES slices, waits sampled. */
export const MEASURE: MeasureOptions = { seconds: DURATION, slices: SLICES, sampleMs: SAMPLE_MS };
/** Concurrency of the inbox-mode run (compared with the inline receiver's at the same one). */
export const INBOX_CONCURRENCY = 8;
export const DRAIN_TIMEOUT_MS = Number(args['drain-timeout']) * 1000;
/** Concurrencies of the wallet run: --concurrency when given, else 8 alone. */
export const WALLET_CONCURRENCY = args.concurrency ? CONCURRENCY : [8];
/** Shared secret of the wallet run's receiver and stand-in wallet. */
/** Interval of the wallet run's `GET /wallet/status` polls, ms. */
export const WALLET_POLL_MS = 500;

/** A load profile as run: its pool, titles and whether the inbox-mode run follows it. */
export interface ProfileSpec {
  key: LoadProfile;
  title: string;
  /** Prefix of its ratio line (today's mix keeps the historical line). */
  ratioLabel: string;
  // 40 blocks of 100 coupons or more: the 32 batches in flight at concurrency 32 never share one.
  pool: PoolSpec;
  inbox: boolean;
  /** Whether the wallet run (`--wallet`) follows its inline runs. */
  wallet: boolean;
}

export const PROFILES: Record<LoadProfile, ProfileSpec> = {
  mixed: {
    key: 'mixed',
    title: "today's mix",
    ratioLabel: 'throughput ratio',
    pool: {
      coupons: Number(args['pool-coupons'] ?? (QUICK ? 4000 : 6400)),
      players: Number(args.players),
      seed: 20261130,
    },
    inbox: false,
    wallet: false,
  },
  money: {
    key: 'money',
    title: 'money-heavy',
    ratioLabel: 'money-heavy throughput ratio',
    // Registering goes through the partner API at about 100 requests/s on a 2-core machine: --quick
    // halves the pool (still 50 blocks; 5 coupons per player).
    pool: {
      coupons: Number(args['money-coupons'] ?? (QUICK ? 5000 : 10000)),
      players: Number(args['money-players']),
      seed: 20261130,
    },
    inbox: !args['no-inbox'],
    wallet: args.wallet as boolean,
  },
};

/** Stops before any work on a wrong option value. */
export function usage(message: string): never {
  console.error(`${message} (npm run bench -- --help)`);
  process.exit(2);
}

export const SELECTED: ProfileSpec[] = (args.profiles as string).split(',').map((name) => {
  const key = name.trim();
  if (!Object.hasOwn(PROFILES, key)) usage(`--profiles: unknown profile '${key}' (mixed, money)`);
  return PROFILES[key as LoadProfile];
});

if (RECEIVER_BUILD && (args.large || args.wallet)) usage('--receiver-build: not with --large or --wallet');
if (args.wallet && !SELECTED.includes(PROFILES.money))
  usage('--wallet: the wallet run follows the money profile (--profiles money or mixed,money)');

/** An `--X-env K=V,...` option: extra environment of a receiver. */
export function envOption(name: 'inbox-env' | 'wallet-env'): Record<string, string> {
  return Object.fromEntries(
    ((args[name] as string | undefined) ?? '')
      .split(',')
      .filter(Boolean)
      .map((item) => {
        const eq = item.indexOf('=');
        if (eq < 1) usage(`--${name}: expected NAME=VALUE, got '${item}'`);
        return [item.slice(0, eq).trim(), item.slice(eq + 1).trim()];
      }),
  );
}

/** `--inbox-env`: extra environment of the inbox-mode receiver. */
export const INBOX_ENV = envOption('inbox-env');
/** `--wallet-env`: extra environment of the wallet run's receiver. */
export const WALLET_ENV = envOption('wallet-env');
/** Operation types written to the outbox in the wallet run, on both sides. */
export const WALLET_TYPES = WALLET_ENV.WALLET_OPERATION_TYPES ?? DEFAULT_WALLET_OPERATION_TYPES;
