/** One phase of `npm run bench`: a profile's load on the receiver and the baseline, each on a fresh database. */
import { poolCoupons, poolPlayers } from './load.js';
import {
  balanceTotals,
  CURRENCY,
  cloneDatabase,
  createDatabase,
  databaseUrl,
  dropDatabases,
  registerOnReceiver,
  seedBaseline,
  seededTotals,
  lastBatchId,
  tableCounts,
} from './setup.js';
import { InboxStats, printInbox, runInbox } from './run-inbox.js';
import { measureConcurrency, RunStats, warmUp } from './run-load.js';
import {
  args,
  CONCURRENCY,
  DURATION,
  INBOX_CONCURRENCY,
  MEASURE,
  OPS_KEY,
  PORT_BASE,
  ProfileSpec,
  RECEIVER_BUILD,
  SAMPLE_MS,
} from './run-options.js';
import { describeBalances, mb, perBatch, printTable } from './run-report.js';
import { children, Side } from './run-sides.js';
import { describeWaits } from './run-waits.js';
import { printWallet, runWallet, WalletRunStats } from './run-wallet.js';

/** A set of databases the profiles run on: empty, or preloaded with 1 M coupons / 5 M bets. */
export interface Dataset {
  /** `empty` or `large` (log file names). */
  key: string;
  name: string;
  large: boolean;
}

/** What a phase (one profile on one dataset) measured. */
export interface PhaseResult {
  profile: ProfileSpec;
  dataset: Dataset;
  rows: RunStats[];
  inbox?: InboxStats;
  wallet?: WalletRunStats;
}

/**
 * One profile on one dataset: fresh receiver and baseline databases cloned from `template`, the
 * pool registered, then every concurrency in interleaved slices; for a profile with `inbox`, the
 * registered receiver database is cloned first and the inbox-mode run follows on it; likewise,
 * with `wallet`, both databases for the wallet run.
 */
export async function runPhase(
  admin: string,
  template: string,
  profile: ProfileSpec,
  dataset: Dataset,
  phaseIndex: number,
): Promise<PhaseResult> {
  const t0 = performance.now();
  const dbPrefix = args['db-prefix'] as string;
  const dbs = {
    receiver: `${dbPrefix}_receiver`,
    baseline: `${dbPrefix}_baseline`,
    inbox: `${dbPrefix}_inbox`,
    walletReceiver: `${dbPrefix}_wallet_receiver`,
    walletBaseline: `${dbPrefix}_wallet_baseline`,
  };
  const withInbox = profile.inbox && !dataset.large;
  const withWallet = profile.wallet && !dataset.large;
  await dropDatabases(admin, Object.values(dbs));
  // Another build's receiver migrates its own, empty database at start-up.
  if (RECEIVER_BUILD) await createDatabase(admin, dbs.receiver);
  else await cloneDatabase(admin, template, dbs.receiver, dataset.large);
  await cloneDatabase(admin, template, dbs.baseline, dataset.large);

  const logKey = `${profile.key}-${dataset.key}`;
  const prefix = `b${phaseIndex}`;
  // (batch ids are `<prefix>-<7 digits>`)
  const receiver = new Side('receiver', PORT_BASE + 1, databaseUrl(admin, dbs.receiver), prefix, profile);
  const baseline = new Side('baseline', PORT_BASE + 2, databaseUrl(admin, dbs.baseline), prefix, profile);
  children.push(receiver, baseline);
  const coupons = poolCoupons(profile.pool);
  const players = poolPlayers(profile.pool);
  await seedBaseline(baseline.dbUrl, players, coupons);
  if (withWallet) await cloneDatabase(admin, dbs.baseline, dbs.walletBaseline, false);
  process.env.BASELINE_POOL_SIZE = args['baseline-pool-size'] as string;
  await Promise.all([receiver.start(`${logKey}-receiver`), baseline.start(`${logKey}-baseline`)]);
  const tReg = performance.now();
  await registerOnReceiver(`http://127.0.0.1:${receiver.port}`, OPS_KEY, players, coupons);
  const regSeconds = (performance.now() - tReg) / 1000;
  const [rt, bt] = await Promise.all([seededTotals(receiver.dbUrl), seededTotals(baseline.dbUrl)]);
  if (rt.coupons !== bt.coupons || rt.balance !== bt.balance) {
    throw new Error(`seeding differs: receiver ${JSON.stringify(rt)}, baseline ${JSON.stringify(bt)}`);
  }
  console.log(
    `${profile.title}, ${dataset.name}: registered ${coupons.length} coupons of ${players.length} players ` +
      `through the receiver's partner API in ${regSeconds.toFixed(1)} s (baseline: bulk SQL); ` +
      `player balances ${rt.balance} on both sides`,
  );
  if (withInbox || withWallet) {
    // The inbox and wallet runs get the same registered coupons: copies of the receiver's database as it is now.
    await receiver.stop();
    if (withInbox) await cloneDatabase(admin, dbs.receiver, dbs.inbox, false);
    if (withWallet) await cloneDatabase(admin, dbs.receiver, dbs.walletReceiver, false);
    await receiver.start(`${logKey}-receiver`, true);
  }
  const sides = [receiver, baseline];
  await warmUp(sides);
  const rows: RunStats[] = [];
  for (const c of CONCURRENCY) rows.push(...(await measureConcurrency(admin, sides, c, MEASURE)));
  // Both sides got the same sequence; up to the last batch both reached they wrote the same rows.
  const last = await Promise.all([lastBatchId(receiver.dbUrl, prefix), lastBatchId(baseline.dbUrl, prefix)]);
  const common = [last[0] ?? '', last[1] ?? ''].sort()[0];
  const [rc, bc, rb, bb] = await Promise.all([
    tableCounts(receiver.dbUrl, prefix, common),
    tableCounts(baseline.dbUrl, prefix, common),
    balanceTotals(receiver.dbUrl),
    balanceTotals(baseline.dbUrl),
  ]);
  await receiver.stop();
  await baseline.stop();
  children.splice(0);

  let inbox: InboxStats | undefined;
  if (withInbox) {
    const inline = rows.find((r) => r.side === 'receiver' && r.connections === INBOX_CONCURRENCY);
    inbox = await runInbox(databaseUrl(admin, dbs.inbox), prefix, profile, logKey, inline);
  }
  const wallet = withWallet
    ? await runWallet(
        admin,
        databaseUrl(admin, dbs.walletReceiver),
        databaseUrl(admin, dbs.walletBaseline),
        prefix,
        profile,
        logKey,
      )
    : undefined;
  if (!args['keep-databases']) await dropDatabases(admin, Object.values(dbs));

  console.log('');
  console.log(
    `${profile.title}, ${dataset.name}: ${DURATION} s per run, ${profile.pool.coupons} registered coupons ` +
      `(${profile.pool.players} players), 100-coupon batches, 1-8 events per coupon, ` +
      `${((performance.now() - t0) / 1000).toFixed(0)} s for the phase`,
  );
  printTable(rows);
  console.log(
    `wait events (pg_stat_activity of each side's database every ${SAMPLE_MS} ms, state active; ` +
      'shares of active-session samples):',
  );
  for (const r of rows) console.log(`  ${r.side} c=${r.connections}: ${describeWaits(r.waits)}`);
  console.log(`same work, rows of the batches both sides committed (up to ${common}):`);
  console.log(`  receiver: ${perBatch(rc)}`);
  console.log(`  baseline: ${perBatch(bc)}`);
  if (rc.operations !== bc.operations || rc.entries !== bc.entries || rc.playersNet !== bc.playersNet) {
    console.log(
      '  (operations or amounts differ: at high concurrency the two sides may apply two batches of one coupon in ' +
        'different orders, and from there on post different money; bench/RESULTS.md, "Same-work check")',
    );
  }
  const total = Object.values(rc.transitions).reduce((a, b) => a + b, 0) || 1;
  console.log(
    'transitions of those snapshots (receiver): ' +
      Object.entries(rc.transitions)
        .map(([t, n]) => `${t} ${((100 * n) / total).toFixed(0)}%`)
        .join(', '),
  );
  console.log(`balances (${CURRENCY}) after the phase:`);
  console.log(`  receiver: ${describeBalances('receiver', rb)}`);
  console.log(`  baseline: ${describeBalances('baseline', bb)}`);
  const peak = Math.max(...rows.filter((r) => r.side === 'receiver').map((r) => r.hwmMb));
  console.log(`receiver peak RSS (VmHWM over the phase): ${mb(peak)}`);
  if (inbox) printInbox(inbox);
  if (wallet) printWallet(wallet);
  console.log('');
  return { profile, dataset, rows, inbox, wallet };
}
