import { Agent, get } from 'node:http';
import pg from 'pg';
import request from 'supertest';
import { MIGRATIONS } from '../../migrations/index.js';
import { ShutdownState } from '../../src/platform/health/shutdown-state.js';
import { whileDatabaseDown } from '../support/database-faults.js';
import { scrape } from '../support/metrics.js';
import {
  batchOf,
  createTestApp,
  deliver,
  deposit,
  expectError,
  ops,
  register,
  useTestApp,
} from '../support/test-app.js';
import { sleep } from '../support/wait.js';

// Health probes and graceful shutdown (CONTRACT §5: "shutting down" and "database unavailable"
// are 503): liveness, readiness with the database ping and migrations, readiness during a database
// outage, and the shutdown sequence with a batch transaction in flight.

describe('health probes', () => {
  const t = useTestApp();

  it('GET /health/live → 200 {status: ok} with the process indicator, no bearer key needed', async () => {
    const res = await request(t.app.getHttpServer()).get('/health/live');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-cache, no-store, must-revalidate');
    expect(res.body).toEqual({
      status: 'ok',
      info: { process: { status: 'up', uptimeSeconds: expect.any(Number) } },
      error: {},
      details: { process: { status: 'up', uptimeSeconds: expect.any(Number) } },
    });
  });

  it('GET /health/ready → 200 with shutdown, database and migrations up', async () => {
    const res = await request(t.app.getHttpServer()).get('/health/ready');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      info: {
        shutdown: { status: 'up' },
        database: { status: 'up', responseTime: expect.any(Number) },
        migrations: { status: 'up', applied: MIGRATIONS.length, responseTime: expect.any(Number) },
      },
      error: {},
      details: {
        shutdown: { status: 'up' },
        database: { status: 'up', responseTime: expect.any(Number) },
        migrations: { status: 'up', applied: MIGRATIONS.length, responseTime: expect.any(Number) },
      },
    });
  });

  it('database refusing connections → readiness 503 (database down) within 2 s; back → 200', async () => {
    await whileDatabaseDown(t.config.database.databaseUrl as string, async () => {
      const started = Date.now();
      const res = await request(t.app.getHttpServer()).get('/health/ready');
      const elapsed = Date.now() - started;
      expect(res.status).toBe(503);
      expect(res.body.status).toBe('error');
      expect(res.body.error.database.status).toBe('down');
      expect(typeof res.body.error.database.message).toBe('string');
      expect(res.body.info.shutdown).toEqual({ status: 'up' });
      expect(elapsed).toBeLessThan(2000);
      // The callback meets the same outage: 503, never a 500.
      expectError(
        await deliver(t.app, batchOf('outage-1', { code: 'O-1', status: 1 })),
        503,
        'transient_failure',
      );
    });
    const back = await request(t.app.getHttpServer()).get('/health/ready');
    expect(back.status).toBe(200);
    expect(back.body.status).toBe('ok');
  }, 15_000);
});

describe('graceful shutdown', () => {
  it('readiness and new requests 503 at once; the batch in flight commits and is answered 200; keep-alive does not hold the close', async () => {
    const t = await createTestApp();
    const server = t.app.getHttpServer();
    let closed = false;
    let holder: pg.PoolClient | undefined;
    try {
      await deposit(t.app, 'sd', '100.00');
      await register(t.app, 'SD-1', 'sd', '10.00');
      // An idle keep-alive connection, opened before the shutdown.
      const agent = new Agent({ keepAlive: true });
      await new Promise<void>((ok, fail) =>
        get(`${t.url}/health/live`, { agent }, (res) => {
          res.resume();
          res.on('end', ok);
        }).on('error', fail),
      );

      // The batch in flight waits on a coupon row lock held here.
      holder = await t.db.connect();
      await holder.query('BEGIN');
      await holder.query(`SELECT coupon_code FROM coupons WHERE coupon_code = 'SD-1' FOR UPDATE`);
      const inflight = deliver(
        t.app,
        batchOf('sd-inflight', { code: 'SD-1', status: 2, realWin: '25.00' }),
      ).then((r) => r);
      await sleep(300);

      // What main.ts does on SIGTERM.
      t.app.get(ShutdownState).begin('SIGTERM');
      const closing = t.app.close().then(() => {
        closed = true;
      });

      const ready = await request(server).get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.status).toBe('shutting_down');
      expect(ready.body.details.shutdown).toEqual({
        status: 'down',
        message: 'shutting down',
        inflightRequests: 1,
      });
      expect((await request(server).get('/health/live')).status).toBe(200);

      const late = await deliver(t.app, batchOf('sd-late', { code: 'SD-2', status: 1 }));
      expectError(late, 503, 'transient_failure');
      expect(late.headers.connection).toBe('close');
      expect(late.body.error.message).toBe('shutting down, retry later');
      expectError(await ops(t.app).get('/accounts/sd'), 503, 'transient_failure');
      // The refused callback is counted (and logged) as a failed delivery; metrics stay readable.
      expect(await scrape(t.app)).toContain('settlement_callback_deliveries_total{outcome="failed"} 1\n');
      expect(closed).toBe(false); // still draining the batch in flight

      await holder.query('COMMIT');
      holder.release();
      holder = undefined;
      const answered = await inflight;
      expect(answered.status).toBe(200);
      expect(answered.body).toStrictEqual({ success: true, processed: 1 });
      const started = Date.now();
      await closing;
      expect(Date.now() - started).toBeLessThan(2000);
      agent.destroy();

      const { rows } = await t.db.query(
        `SELECT batch_id FROM callback_batches WHERE batch_id IN ('sd-inflight', 'sd-late') ORDER BY batch_id`,
      );
      expect(rows).toEqual([{ batch_id: 'sd-inflight' }]);
      const ledger = await t.db.query(`SELECT balance::text AS balance FROM accounts WHERE id = 'sd'`);
      expect(ledger.rows).toEqual([{ balance: '115.00000000' }]);
    } finally {
      if (holder) {
        await holder.query('ROLLBACK').catch(() => undefined);
        holder.release();
      }
      if (!closed) await t.app.close();
      await t.close().catch(() => undefined);
    }
  }, 20_000);
});
