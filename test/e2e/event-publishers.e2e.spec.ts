import { jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import amqp from 'amqplib';
import type { ChannelModel } from 'amqplib';
import { TcpProxy } from '../../sim/tcp-proxy.js';
import { batchOf, createTestApp, deliver, deposit, ops, register, TestContext } from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// Issue 33: the shipped event publishers against the machine's real brokers (RabbitMQ on 5672,
// NATS JetStream on 4222, .ci/run starts them), each behind a TCP proxy so that a test can take
// the broker away without stopping the machine's service: every settlement event published with
// the operation key as its id, in order per account; the broker down, events wait (pending,
// attempts counted) and go out in order once it is back; RabbitMQ may deliver an event again
// (at least once), NATS JetStream stores it once (Nats-Msg-Id within the duplicate window).

const RUN = `${process.pid}${Date.now() % 100_000}`;

/** What a test reads off a broker: each message's id and body, in the broker's order. */
interface Received {
  id: string;
  event: { operationKey: string; type: string; direction: string; amount: string; accountId: string };
}

/** The settle flow of one player: a stake, a win, a recalculation (three events, in this order). */
async function settleThree(t: TestContext, account: string, code: string): Promise<string[]> {
  await deposit(t.app, account, '50.00', `${account}-dep`);
  await register(t.app, code, account, '10.00');
  expect((await deliver(t.app, batchOf(`${code}-1`, { code, status: 2, realWin: '30.00' }))).status).toBe(
    200,
  );
  expect((await deliver(t.app, batchOf(`${code}-2`, { code, status: 15, realWin: '0.00' }))).status).toBe(
    200,
  );
  return [`${code}:0:stake_debit`, `${code}:0:final_credit`, `${code}:1:recalculation_debit`];
}

/** The ids of `account`'s messages in order, each first occurrence (a redelivery comes later, if at all). */
const firstsOf = (received: Received[], account: string) => [
  ...new Set(received.filter((m) => m.event.accountId === account).map((m) => m.id)),
];

/** The outbox rows of `publisher` of `account`: key and status, in id order. */
async function rows(t: TestContext, publisher: string, account: string): Promise<string[]> {
  const { rows: found } = await t.db.query<{ key: string; status: string }>(
    `SELECT operation_key AS key, status FROM event_outbox WHERE publisher = $1 AND account_id = $2 ORDER BY id`,
    [publisher, account],
  );
  return found.map((r) => `${r.key} ${r.status}`);
}

describe('the RabbitMQ publisher (publisher confirms), behind a proxy', () => {
  const exchange = `settlement-test-${RUN}`;
  let proxy: TcpProxy;
  let consumer: ChannelModel;
  let t: TestContext;
  const received: Received[] = [];

  beforeAll(async () => {
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: 5672 });
    // The consumer, straight to the broker: its queue bound before any event is published.
    consumer = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    const channel = await consumer.createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: true });
    const { queue } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(queue, exchange, '#');
    await channel.consume(
      queue,
      (msg) => {
        if (!msg) return;
        received.push({
          id: String(msg.properties.messageId),
          event: JSON.parse(msg.content.toString('utf8')),
        });
      },
      { noAck: true },
    );
    t = await createTestApp({
      EVENT_PUBLISHERS: 'rabbitmq',
      RABBITMQ_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}`,
      RABBITMQ_EXCHANGE: exchange,
      EVENT_POLL_INTERVAL_MS: '20',
      EVENT_RETRY_BASE_MS: '50',
      EVENT_RETRY_MAX_MS: '300',
      EVENT_TIMEOUT_MS: '1000',
    });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await consumer?.close().catch(() => undefined);
    await proxy?.close();
  });

  it('publishes each operation once, its key as the message id, in order per account, confirmed', async () => {
    const a = await settleThree(t, 'rmq-a', 'RMQA');
    const b = await settleThree(t, 'rmq-b', 'RMQB');
    await eventually(
      async () => firstsOf(received, 'rmq-a').length === 3 && firstsOf(received, 'rmq-b').length === 3,
      'six events',
    );
    expect(firstsOf(received, 'rmq-a')).toEqual(a);
    expect(firstsOf(received, 'rmq-b')).toEqual(b);
    expect(received.filter((m) => m.event.accountId === 'rmq-a').map((m) => m.event)).toEqual([
      expect.objectContaining({
        operationKey: a[0],
        type: 'stake_debit',
        direction: 'debit',
        amount: '10.00',
      }),
      expect.objectContaining({
        operationKey: a[1],
        type: 'final_credit',
        direction: 'credit',
        amount: '30.00',
      }),
      expect.objectContaining({
        operationKey: a[2],
        type: 'recalculation_debit',
        direction: 'debit',
        amount: '30.00',
      }),
    ]);
    expect(
      await eventually(async () => {
        const got = await rows(t, 'rabbitmq', 'rmq-a');
        return got.every((r) => r.endsWith(' delivered')) && got;
      }, 'rows of rmq-a delivered'),
    ).toEqual(a.map((k) => `${k} delivered`));
  });

  it('the broker down: events wait (pending, attempts counted); once it is back they go out in order', async () => {
    proxy.resetAll();
    proxy.hold();
    const keys = await settleThree(t, 'rmq-c', 'RMQC');
    const waiting = await eventually(
      async () => {
        const { rows: r } = await t.db.query<{ attempts: number; status: string }>(
          `SELECT attempts, status FROM event_outbox WHERE publisher = 'rabbitmq' AND operation_key = $1`,
          [keys[0]],
        );
        return r[0]?.attempts >= 2 && r[0];
      },
      'the first event retried',
      { timeoutMs: 20_000 },
    );
    expect(waiting.status).toBe('pending');
    expect(firstsOf(received, 'rmq-c')).toEqual([]);
    // Its account's later events wait behind it.
    expect(await rows(t, 'rabbitmq', 'rmq-c')).toEqual(keys.map((k) => `${k} pending`));
    proxy.release();
    await eventually(
      async () => firstsOf(received, 'rmq-c').length === 3,
      'the three events after the outage',
      {
        timeoutMs: 30_000,
      },
    );
    expect(firstsOf(received, 'rmq-c')).toEqual(keys);
    expect(
      await eventually(
        async () => {
          const got = await rows(t, 'rabbitmq', 'rmq-c');
          return got.every((r) => r.endsWith(' delivered')) && got;
        },
        'rows of rmq-c delivered',
        { timeoutMs: 20_000 },
      ),
    ).toEqual(keys.map((k) => `${k} delivered`));
  }, 90_000);
  it('the operators pause and resume a publisher; events wait meanwhile; a row shows its attempts and bytes', async () => {
    const before = await ops(t.app).get('/events/status');
    expect(before.body).toEqual([
      expect.objectContaining({
        publisher: 'rabbitmq',
        paused: false,
        changedAt: null,
        pending: 0,
        parked: 0,
      }),
    ]);
    const paused = await ops(t.app, 'operator').post('/events/rabbitmq/pause', {
      reason: 'broker maintenance',
    });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({
      publisher: 'rabbitmq',
      paused: true,
      reason: 'broker maintenance',
      changedBy: 'operator',
    });
    const keys = await settleThree(t, 'rmq-d', 'RMQD');
    await new Promise((r) => setTimeout(r, 500));
    expect(await rows(t, 'rabbitmq', 'rmq-d')).toEqual(keys.map((k) => `${k} pending`));
    expect((await ops(t.app).get('/events/status')).body[0]).toMatchObject({ paused: true, pending: 3 });
    expect((await ops(t.app, 'operator').post('/events/rabbitmq/resume', {})).body).toMatchObject({
      paused: false,
    });
    await eventually(async () => firstsOf(received, 'rmq-d').length === 3, 'the events after the resume');
    expect(firstsOf(received, 'rmq-d')).toEqual(keys);
    const list = await ops(t.app).get('/events/rabbitmq/outbox?status=delivered&limit=1');
    expect(list.status).toBe(200);
    const detail = await ops(t.app).get(`/events/rabbitmq/outbox/${list.body.items[0].id}`);
    expect(detail.body).toMatchObject({ status: 'delivered', operationKey: keys[2] });
    expect(JSON.parse(detail.body.body)).toMatchObject({ eventId: keys[2], type: 'recalculation_debit' });
    expect(detail.body.deliveryAttempts.at(-1)).toMatchObject({
      connector: 'rabbitmq',
      outcome: 'delivered',
    });
    expect((await ops(t.app).get('/events/kafka/outbox')).status).toBe(404);
    const { rows: actions } = await t.db.query(
      `SELECT action, target_kind, target_id, reason FROM operator_actions WHERE action LIKE 'publisher_%' ORDER BY id`,
    );
    expect(actions).toEqual([
      {
        action: 'publisher_pause',
        target_kind: 'publisher',
        target_id: 'rabbitmq',
        reason: 'broker maintenance',
      },
      { action: 'publisher_resume', target_kind: 'publisher', target_id: 'rabbitmq', reason: null },
    ]);
  });
});

describe('the NATS JetStream publisher (Nats-Msg-Id), behind a proxy', () => {
  const stream = `SETTLEMENT_T${RUN}`;
  const prefix = `settlement_t${RUN}`;
  let proxy: TcpProxy;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let t: TestContext;

  /** The stream's messages in order (each stored once: JetStream de-duplicates by Nats-Msg-Id). */
  async function stored(): Promise<Received[]> {
    const info = await jsm.streams.info(stream).catch(() => undefined);
    const out: Received[] = [];
    for (let seq = 1; info && seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (m) out.push({ id: m.header.get('Nats-Msg-Id'), event: m.json() });
    }
    return out;
  }

  beforeAll(async () => {
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: 4222 });
    nc = await natsConnect({ servers: '127.0.0.1:4222' });
    jsm = await jetstreamManager(nc);
    t = await createTestApp({
      EVENT_PUBLISHERS: 'nats',
      NATS_SERVERS: `127.0.0.1:${proxy.port}`,
      NATS_STREAM: stream,
      NATS_SUBJECT_PREFIX: prefix,
      EVENT_POLL_INTERVAL_MS: '20',
      EVENT_RETRY_BASE_MS: '50',
      EVENT_RETRY_MAX_MS: '300',
      EVENT_TIMEOUT_MS: '1000',
    });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await jsm?.streams.delete(stream).catch(() => undefined);
    await nc?.close();
    await proxy?.close();
  });

  it('stores each operation once in the stream, its key as Nats-Msg-Id, in order per account', async () => {
    const a = await settleThree(t, 'nats-a', 'NATSA');
    await eventually(async () => (await stored()).length === 3, 'three events in the stream');
    const got = await stored();
    expect(got.map((m) => m.id)).toEqual(a);
    expect(got.map((m) => `${m.event.type} ${m.event.direction} ${m.event.amount}`)).toEqual([
      'stake_debit debit 10.00',
      'final_credit credit 30.00',
      'recalculation_debit debit 30.00',
    ]);
    const info = await jsm.streams.info(stream);
    expect(info.config.subjects).toEqual([`${prefix}.>`]);
  });

  it('the server away: events wait, then go out in order, each stored once', async () => {
    proxy.resetAll();
    proxy.hold();
    const keys = await settleThree(t, 'nats-b', 'NATSB');
    await eventually(
      async () => {
        const { rows: r } = await t.db.query<{ attempts: number }>(
          `SELECT attempts FROM event_outbox WHERE publisher = 'nats' AND operation_key = $1`,
          [keys[0]],
        );
        return r[0]?.attempts >= 2;
      },
      'the first event retried',
      { timeoutMs: 20_000 },
    );
    expect(await rows(t, 'nats', 'nats-b')).toEqual(keys.map((k) => `${k} pending`));
    proxy.release();
    await eventually(
      async () => {
        const got = await rows(t, 'nats', 'nats-b');
        return got.every((r) => r.endsWith(' delivered'));
      },
      'rows of nats-b delivered',
      { timeoutMs: 30_000 },
    );
    const ids = (await stored()).filter((m) => m.event.accountId === 'nats-b').map((m) => m.id);
    expect(ids).toEqual(keys);
  }, 90_000);
});
