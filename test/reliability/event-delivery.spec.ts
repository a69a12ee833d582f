import { jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { batchOf } from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import {
  fundCoupons,
  portRange,
  post,
  Receiver,
  startReceiver,
  stopReceiver,
  suiteDatabase,
  SuiteDatabase,
} from './support/receiver.js';
import { TcpProxy } from '../../sim/tcp-proxy.js';

// Issue 33 (docs/events.md): a SIGKILL of the receiver between the settlement's COMMIT and the
// event's publish, and between the publish and its record, publishes each event once: the new
// process sends the stored bytes with the same Nats-Msg-Id, and JetStream stores it once.

const [PORT] = portRange(97, 1);
const RUN = `${process.pid}${Date.now() % 100_000}`;
const STREAM = `SETTLEMENT_R${RUN}`;
const PREFIX = `settlement_r${RUN}`;
/** A crashed worker's rows wait for their lease: 2 × EVENT_TIMEOUT_MS + 10 s, then the restart. */
const LEASE_WAIT_MS = 40_000;

describe('SIGKILL of the receiver around an event publish (NATS JetStream)', () => {
  let db: SuiteDatabase;
  let proxy: TcpProxy;
  let receiver: Receiver | undefined;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const env = () => ({
    EVENT_PUBLISHERS: 'nats',
    NATS_SERVERS: `127.0.0.1:${proxy.port}`,
    NATS_STREAM: STREAM,
    NATS_SUBJECT_PREFIX: PREFIX,
    EVENT_TIMEOUT_MS: '1000',
    EVENT_RETRY_BASE_MS: '50',
    EVENT_RETRY_MAX_MS: '300',
    EVENT_POLL_INTERVAL_MS: '20',
    LOG_LEVEL: 'warn',
  });

  /** Each stored message's Nats-Msg-Id, in the stream's order. */
  async function storedIds(): Promise<string[]> {
    const info = await jsm.streams.info(STREAM).catch(() => undefined);
    const ids: string[] = [];
    for (let seq = 1; info && seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(STREAM, { seq }).catch(() => null);
      if (m) ids.push(m.header.get('Nats-Msg-Id'));
    }
    return ids;
  }

  /** The event rows of `account`: key, status and attempts, in id order. */
  async function rows(account: string): Promise<string[]> {
    const { rows: found } = await db.pool.query<{ key: string; status: string; attempts: number }>(
      `SELECT operation_key AS key, status, attempts FROM event_outbox WHERE account_id = $1 ORDER BY id`,
      [account],
    );
    return found.map((r) => `${r.key} ${r.status}`);
  }

  beforeAll(async () => {
    db = await suiteDatabase(2);
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: 4222 });
    nc = await natsConnect({ servers: '127.0.0.1:4222' });
    jsm = await jetstreamManager(nc);
    receiver = await startReceiver(PORT, db.url, env());
  }, 120_000);

  afterAll(async () => {
    await stopReceiver(receiver);
    await jsm?.streams.delete(STREAM).catch(() => undefined);
    await nc?.close();
    await proxy?.close();
    await db?.close();
  });

  it('killed between COMMIT and publish: the new process publishes each event once, in order', async () => {
    await fundCoupons(
      receiver!.url,
      { id: 'sk-a', amount: '20.00', key: 'sk-a-dep', reason: 'kill' },
      ['SKA1'],
      '2.00',
    );
    // The stream exists once the first event is stored.
    await eventually(async () => (await storedIds()).length === 1, 'the stake event stored');
    proxy.resetAll();
    proxy.hold();
    expect(
      (await post(receiver!.url, batchOf('ska-1', { code: 'SKA1', status: 2, realWin: '9.50' }))).status,
    ).toBe(200);
    // Committed with the settlement, not published: the broker is away.
    await eventually(async () => {
      const r = await rows('sk-a');
      return r[1] === 'SKA1:0:final_credit pending';
    }, 'the credit event written');
    receiver!.kill('SIGKILL');
    expect(await receiver!.exited).toEqual({ code: null, signal: 'SIGKILL' });
    proxy.release();
    receiver = await startReceiver(PORT, db.url, env());
    await eventually(
      async () => (await rows('sk-a')).every((r) => r.endsWith(' delivered')),
      'both events delivered',
      {
        timeoutMs: LEASE_WAIT_MS,
        intervalMs: 200,
      },
    );
    expect(await storedIds()).toEqual(['SKA1:0:stake_debit', 'SKA1:0:final_credit']);
  }, 120_000);

  it('killed after the publish, before its record: published again with the same id, stored once', async () => {
    await fundCoupons(
      receiver!.url,
      { id: 'sk-b', amount: '20.00', key: 'sk-b-dep', reason: 'kill' },
      ['SKB1'],
      '2.00',
    );
    await eventually(
      async () => (await rows('sk-b')).every((r) => r.endsWith(' delivered')),
      'the stake event',
    );
    // The publish reaches the server; its ack never comes back.
    proxy.arm({ marker: `${PREFIX}.operation.final_credit`, then: 'answerLost' });
    expect(
      (await post(receiver!.url, batchOf('skb-1', { code: 'SKB1', status: 2, realWin: '4.25' }))).status,
    ).toBe(200);
    await eventually(
      async () => (await storedIds()).includes('SKB1:0:final_credit'),
      'the credit stored by the server',
    );
    expect(await rows('sk-b')).toEqual(['SKB1:0:stake_debit delivered', 'SKB1:0:final_credit pending']);
    receiver!.kill('SIGKILL');
    await receiver!.exited;
    proxy.release();
    receiver = await startReceiver(PORT, db.url, env());
    await eventually(
      async () => (await rows('sk-b')).every((r) => r.endsWith(' delivered')),
      'the credit recorded',
      {
        timeoutMs: LEASE_WAIT_MS,
        intervalMs: 200,
      },
    );
    const ids = await storedIds();
    expect(ids.filter((id) => id.startsWith('SKB1'))).toEqual(['SKB1:0:stake_debit', 'SKB1:0:final_credit']);
    const { rows: attempts } = await db.pool.query<{ answer: string }>(
      `SELECT a.answer FROM event_delivery_attempts a JOIN event_outbox o ON o.id = a.outbox_id
        WHERE o.operation_key = 'SKB1:0:final_credit' ORDER BY a.id`,
    );
    // The attempt that died is not recorded; the new one was answered as a duplicate.
    expect(attempts.map((a) => a.answer)).toEqual([expect.stringMatching(/ \(duplicate\)$/)]);
  }, 120_000);
});
