/**
 * Throughput benchmark: the receiver as `npm start` starts it (`node … dist/src/main.js`) against the raw
 * baseline (bench/baseline-server.ts), each on a fresh database of one PostgreSQL server, loaded by
 * autocannon with signed 100-coupon batches (bench/load.ts) of two profiles, today's mix then the
 * money-heavy one, sampling each side's sessions for lock waits; then the receiver in inbox mode
 * under the money-heavy load; with `--wallet`, the money-heavy load once more with the wallet
 * outbox on both sides (the receiver delivering to the stand-in wallet). `npm run bench -- --help`
 * lists the options; docs/benchmark.md explains the figures. The last line is always (today's mix, when it ran)
 *   throughput ratio receiver/baseline: R (receiver X batches/s, baseline Y batches/s, receiver p99 Z ms)
 */
import { startOtlpSink } from './otlp-sink.js';
import { runBench } from './processes.js';
import { createMigratedDatabase, databaseUrl, dropDatabases, preload } from './setup.js';
import { inboxRatioLine } from './run-inbox.js';
import { RunStats } from './run-load.js';
import { args, CONCURRENCY, ProfileSpec, RATIO_CONCURRENCY, SELECTED } from './run-options.js';
import { Dataset, PhaseResult, runPhase } from './run-phase.js';
import { ms } from './run-report.js';
import { cleanup, serverUrl, SideName } from './run-sides.js';
import { lockShare } from './run-waits.js';
import { walletRatioLine } from './run-wallet.js';

async function main(): Promise<void> {
  const t0 = performance.now();
  const sink = args.tracing ? await startOtlpSink() : undefined;
  const admin = await serverUrl();
  const dbPrefix = args['db-prefix'] as string;
  const template = `${dbPrefix}_template`;
  const datasets: Dataset[] = [{ key: 'empty', name: 'empty database', large: false }];
  if (args.large)
    datasets.push({ key: 'large', name: 'after preloading 1 M coupons / 5 M bets', large: true });
  const results: PhaseResult[] = [];
  for (const dataset of datasets) {
    await dropDatabases(admin, [template]);
    await createMigratedDatabase(admin, template);
    if (dataset.large) {
      console.log('preloading 1 M coupons / 5 M bets (with their snapshots and ledger) into the template …');
      const seconds = await preload(databaseUrl(admin, template));
      console.log(`preloaded in ${seconds.toFixed(0)} s`);
    }
    for (const profile of SELECTED)
      results.push(await runPhase(admin, template, profile, dataset, results.length));
    await dropDatabases(admin, [template]);
  }
  await cleanup();

  const rowsOf = (profile: ProfileSpec, large: boolean) =>
    results.find((r) => r.profile === profile && r.dataset.large === large)?.rows ?? [];
  const find = (rows: RunStats[], side: SideName, c: number) =>
    rows.find((r) => r.side === side && r.connections === c);
  if (args.large) {
    for (const profile of SELECTED) {
      const p99 = (large: boolean, c: number) => find(rowsOf(profile, large), 'receiver', c)?.p99 ?? NaN;
      console.log(
        `${profile.key === 'mixed' ? '' : `${profile.title} `}receiver p99 growth after preloading: ` +
          CONCURRENCY.map((c) => `c=${c} ${(p99(true, c) / p99(false, c)).toFixed(2)}×`).join(', '),
      );
    }
  }
  console.log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  if (sink) {
    console.log(
      `tracing on: ${sink.stats.exports} OTLP exports, ${sink.stats.bytes} bytes received by the sink`,
    );
    await sink.close();
  }
  for (const r of results) if (r.inbox) console.log(inboxRatioLine(r.inbox));
  for (const r of results) if (r.wallet) console.log(walletRatioLine(r.wallet));
  const walletProblems = results.flatMap((r) => r.wallet?.problems ?? []);
  if (walletProblems.length) {
    // Loud, and the exit status says so; the ratio lines still follow.
    console.error(`wallet delivery check FAILED: ${walletProblems.join('; ')}`);
    process.exitCode = 1;
  }
  // Today's mix last: its line is the one CI and the docs read.
  for (const profile of [...SELECTED].sort((a, b) => Number(a.key === 'mixed') - Number(b.key === 'mixed'))) {
    const rows = rowsOf(profile, false);
    const r = find(rows, 'receiver', RATIO_CONCURRENCY) as RunStats;
    const b = find(rows, 'baseline', RATIO_CONCURRENCY) as RunStats;
    const extra =
      profile.key === 'mixed'
        ? ''
        : CONCURRENCY.filter((c) => c !== RATIO_CONCURRENCY && c > 1)
            .map((c) => {
              const rc = find(rows, 'receiver', c) as RunStats;
              const bc = find(rows, 'baseline', c) as RunStats;
              return `; c=${c} ${(rc.batchesPerSecond / bc.batchesPerSecond).toFixed(2)}`;
            })
            .join('') + `; lock waits receiver ${lockShare(r.waits)}, baseline ${lockShare(b.waits)}`;
    console.log(
      `${profile.ratioLabel} receiver/baseline: ${(r.batchesPerSecond / b.batchesPerSecond).toFixed(2)} ` +
        `(receiver ${r.batchesPerSecond.toFixed(1)} batches/s, baseline ${b.batchesPerSecond.toFixed(1)} batches/s, ` +
        `receiver p99 ${ms(r.p99)} ms${extra})`,
    );
  }
}

runBench(main, cleanup);
