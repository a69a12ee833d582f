/**
 * `npm run bench:events`: every settlement event published exactly once per operation key, under
 * the simulator's faults and a broker restart (docs/events.md, issue 33's figure). The receiver as
 * `npm start` starts it publishes to the machine's RabbitMQ and NATS JetStream, each behind a TCP
 * proxy (sim/tcp-proxy.ts); the simulator sends a seeded sequence (sim generate) through its
 * lossy proxy (answers dropped after the receiver committed, so batches are delivered again);
 * midway, both brokers go away as a restart looks to a client (every connection reset, new ones
 * hung) for --outage seconds. Once every event is confirmed, the brokers' contents are compared
 * with the ledger: each operation key of the published types must be in RabbitMQ's queue (at
 * least once: a redelivery after a lost confirm is counted) and in the NATS stream exactly once.
 * Exit code 1 when an event is missing, or stored twice by JetStream.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { OPS_KEY, SECRET } from './credentials.js';
import { runCli } from '../sim/main.js';
import { startServe } from '../sim/serve.js';
import { TcpProxy } from '../sim/tcp-proxy.js';
import { sleep, startChild, startScriptNodeFlags, stopChild } from './processes.js';
import { createMigratedDatabase, databaseUrl, dropDatabases } from './setup.js';

const { values: args } = parseArgs({
  options: {
    coupons: { type: 'string', default: '200' },
    batches: { type: 'string', default: '60' },
    seed: { type: 'string', default: '33' },
    'drop-rate': { type: 'string', default: '0.2' },
    outage: { type: 'string', default: '5' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    'port-base': { type: 'string', default: '4600' },
    'drain-timeout': { type: 'string', default: '180' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (args.help) {
  console.log(`npm run bench:events [-- options]: settlement events exactly once per operation key (docs/events.md)
  --coupons N --batches N --seed N   the simulator's sequence (200, 60, 33)
  --drop-rate R                      answers the lossy proxy drops after the receiver committed (0.2)
  --outage S                         seconds both brokers are away, midway through the sequence (5)
  --database-url URL                 a PostgreSQL where a database can be created (the local service)
  --port-base N                      receiver N+1, lossy proxy N+2 (4600)
  --drain-timeout S                  seconds to wait for every event to be confirmed (180)`);
  process.exit(0);
}

const ROOT = process.cwd();
const RUN = `${process.pid}`;
const PORT = Number(args['port-base']) + 1;
const EXCHANGE = `bench-events-${RUN}`;
const STREAM = `BENCH_EVENTS_${RUN}`;
const PREFIX = `bench_events_${RUN}`;
const DB = `bench_events_${RUN}`;
const ENTRY = fileURLToPath(new URL('../src/main.js', import.meta.url));

async function main(): Promise<void> {
  const admin = args['database-url'] as string;
  const dir = mkdtempSync(join(tmpdir(), 'bench-events-'));
  const rabbitProxy = await TcpProxy.start({ host: '127.0.0.1', port: 5672 });
  const natsProxy = await TcpProxy.start({ host: '127.0.0.1', port: 4222 });
  // The consumers, straight to the brokers: a queue bound before the first event.
  const rabbit = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
  const channel = await rabbit.createChannel();
  await channel.assertExchange(EXCHANGE, 'topic', { durable: true });
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, EXCHANGE, '#');
  const delivered = new Map<string, number>();
  await channel.consume(
    queue,
    (m) => {
      if (m)
        delivered.set(
          String(m.properties.messageId),
          (delivered.get(String(m.properties.messageId)) ?? 0) + 1,
        );
    },
    { noAck: true },
  );
  const nc = await natsConnect({ servers: '127.0.0.1:4222' });
  const jsm = await jetstreamManager(nc);
  await createMigratedDatabase(admin, DB);
  const url = databaseUrl(admin, DB);
  const flags = startScriptNodeFlags(
    (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
      .scripts.start,
  );
  const receiver = await startChild(
    'receiver (events)',
    [...flags, ENTRY],
    {
      ...process.env,
      DATABASE_URL: url,
      SPORTAPI_WEBHOOK_SECRETS: SECRET,
      OPS_API_KEYS: OPS_KEY,
      PORT: String(PORT),
      HOST: '127.0.0.1',
      EVENT_PUBLISHERS: 'rabbitmq,nats',
      RABBITMQ_URL: `amqp://guest:guest@127.0.0.1:${rabbitProxy.port}`,
      RABBITMQ_EXCHANGE: EXCHANGE,
      NATS_SERVERS: `127.0.0.1:${natsProxy.port}`,
      NATS_STREAM: STREAM,
      NATS_SUBJECT_PREFIX: PREFIX,
      EVENT_RETRY_MAX_MS: '2000',
      EVENT_TIMEOUT_MS: '2000',
    },
    `http://127.0.0.1:${PORT}/health/live`,
    { cwd: ROOT, logPath: resolve(ROOT, '.data/bench/events-receiver.log') },
  );
  const lossy = await startServe({
    port: Number(args['port-base']) + 2,
    proxyTo: `http://127.0.0.1:${PORT}`,
    dropAfterResponse: Number(args['drop-rate']),
    seed: Number(args.seed),
  });
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const quiet = { out: () => undefined, err: (line: string) => console.error(line) };
  try {
    const started = Date.now();
    const code = await runCli(
      ['generate', '--out', dir, '--seed', String(args.seed), '--coupons', String(args.coupons)].concat([
        '--batches',
        String(args.batches),
        '--prefix',
        `ev${RUN}`,
        '--force',
      ]),
      quiet,
    );
    if (code !== 0) throw new Error('sim generate failed');
    // The outage starts once a third of the sequence is out, while the sender goes on.
    const total = Number(args.batches);
    const outage = (async () => {
      for (;;) {
        const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM callback_batches');
        if (rows[0].n >= total / 3) break;
        await sleep(200);
      }
      console.log(`brokers away for ${args.outage} s (connections reset, new ones hung)`);
      for (const proxy of [rabbitProxy, natsProxy]) {
        proxy.resetAll();
        proxy.hold();
      }
      await sleep(Number(args.outage) * 1000);
      for (const proxy of [rabbitProxy, natsProxy]) proxy.release();
      console.log('brokers back');
    })();
    const sent = await runCli(
      ['send', dir, '--url', lossy.url, '--secret', SECRET, '--time-scale', '0.001'].concat([
        '--register',
        join(dir, 'coupons.json'),
        '--ops-key',
        OPS_KEY,
        '--ops-url',
        `http://127.0.0.1:${PORT}`,
      ]),
      quiet,
    );
    await outage;
    if (sent !== 0) throw new Error('sim send failed: a batch was not delivered');
    const until = Date.now() + Number(args['drain-timeout']) * 1000;
    for (;;) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM event_outbox WHERE status <> 'delivered'`,
      );
      if (rows[0].n === 0) break;
      if (Date.now() > until) throw new Error(`${rows[0].n} events not confirmed after the drain timeout`);
      await sleep(500);
    }
    await sleep(1000); // the last confirmed messages reach the consumer
    const { rows: expected } = await db.query<{ key: string }>(
      `SELECT operation_key AS key FROM financial_operations
        WHERE type IN ('stake_debit', 'final_credit', 'recalculation_debit') ORDER BY id`,
    );
    const stored = new Map<string, number>();
    const info = await jsm.streams.info(STREAM);
    for (let seq = 1; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(STREAM, { seq }).catch(() => null);
      if (m) stored.set(m.header.get('Nats-Msg-Id'), (stored.get(m.header.get('Nats-Msg-Id')) ?? 0) + 1);
    }
    const keys = expected.map((r) => r.key);
    const missingRabbit = keys.filter((k) => !delivered.has(k));
    const missingNats = keys.filter((k) => !stored.has(k));
    const twiceNats = [...stored].filter(([, n]) => n > 1).length;
    const extraRabbit = [...delivered.keys()].filter((k) => !keys.includes(k)).length;
    const redelivered = [...delivered.values()].reduce((sum, n) => sum + n - 1, 0);
    const { rows: attempts } = await db.query<{ publisher: string; outcome: string; n: number }>(
      `SELECT o.publisher, a.outcome, count(*)::int AS n FROM event_delivery_attempts a
         JOIN event_outbox o ON o.id = a.outbox_id GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    console.log(
      `sequence: ${args.batches} batches, ${args.coupons} coupons, lossy proxy ${lossy.stats.dropped} answers dropped`,
    );
    console.log(`publish attempts: ${attempts.map((a) => `${a.publisher} ${a.outcome} ${a.n}`).join(', ')}`);
    console.log(
      `events: ${keys.length} operations; rabbitmq: ${keys.length - missingRabbit.length} received, ` +
        `${missingRabbit.length} missing, ${extraRabbit} unknown, ${redelivered} delivered again (at least once); ` +
        `nats: ${keys.length - missingNats.length} stored, ${missingNats.length} missing, ${twiceNats} stored twice; ` +
        `${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
    if (missingRabbit.length || missingNats.length || twiceNats || extraRabbit) process.exitCode = 1;
  } finally {
    await db.end();
    await lossy.close();
    await stopChild(receiver);
    await jsm.streams.delete(STREAM).catch(() => undefined);
    await nc.close();
    await channel.deleteExchange(EXCHANGE).catch(() => undefined);
    await rabbit.close().catch(() => undefined);
    await rabbitProxy.close();
    await natsProxy.close();
    await dropDatabases(admin, [DB]);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`bench:events failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
