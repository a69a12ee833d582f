import { createHash } from 'node:crypto';
import { loadConfig } from '../../src/app.config.js';
import { OPS_KEY, REQUIRED_ENV, SECRET } from '../support/secrets.js';

const sha256 = (s: string) => createHash('sha256').update(s).digest();
const ALL_SCOPES = ['read', 'register', 'money', 'operate'];

const base = REQUIRED_ENV;

describe('loadConfig (validated at start-up)', () => {
  it('applies the defaults of CONTRACT §5 and §10', () => {
    const c = loadConfig(base);
    expect(c).toMatchObject({
      http: { port: 3000, callbackPath: '/sportapi/callback', bodyLimitBytes: 2 * 1024 * 1024 },
      database: { databaseUrl: undefined },
      callback: { signatureHeader: 'x-signature', webhookSecrets: [SECRET] },
      auth: {
        opsApiKeys: [{ name: 'key-1', scopes: ALL_SCOPES, digest: sha256(OPS_KEY), legacy: true }],
        authFailureLimit: 10,
        authFailureWindowMs: 60_000,
      },
      transaction: { callbackDeadlineMs: 8000 },
      money: { amountScale: 2 },
      settlement: { statusMap: { 1: 'PENDING', 2: 'WIN', 3: 'REFUND', 4: 'LOSS', 15: 'RECALCULATION' } },
    });
    expect(c.database.statementTimeoutMs).toBeLessThan(c.transaction.callbackDeadlineMs);
    expect(c.database.lockTimeoutMs).toBeLessThan(c.transaction.callbackDeadlineMs);
  });

  it('bounds the heap growth by default (HEAP_GROWING_PERCENT 100; 0 keeps V8 own factor)', () => {
    expect(loadConfig(base).runtime.heapGrowingPercent).toBe(100);
    expect(loadConfig({ ...base, HEAP_GROWING_PERCENT: '0' }).runtime.heapGrowingPercent).toBe(0);
    expect(() => loadConfig({ ...base, HEAP_GROWING_PERCENT: '-1' })).toThrow(/HEAP_GROWING_PERCENT/);
    expect(() => loadConfig({ ...base, HEAP_GROWING_PERCENT: '301' })).toThrow(/HEAP_GROWING_PERCENT/);
  });

  it('splits comma-separated secrets and keys', () => {
    const [a, b, x, y] = [
      'webhook-secret-aaaa',
      'webhook-secret-bbbb',
      'bare-ops-key-xxxx',
      'bare-ops-key-yyyy',
    ];
    const c = loadConfig({ SPORTAPI_WEBHOOK_SECRETS: ` ${a} , ${b} ,`, OPS_API_KEYS: `${x},${y}` });
    expect(c.callback.webhookSecrets).toEqual([a, b]);
    expect(c.auth.opsApiKeys).toEqual([
      { name: 'key-1', scopes: ALL_SCOPES, digest: sha256(x), legacy: true },
      { name: 'key-2', scopes: ALL_SCOPES, digest: sha256(y), legacy: true },
    ]);
  });

  it.each([
    [{}, 'SPORTAPI_WEBHOOK_SECRETS'],
    [{ SPORTAPI_WEBHOOK_SECRETS: SECRET }, 'OPS_API_KEYS'],
    [{ ...base, PORT: 'abc' }, 'PORT'],
    [{ ...base, DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ ...base, CALLBACK_DEADLINE_MS: '20000' }, 'CALLBACK_DEADLINE_MS'],
    [{ ...base, DB_LOCK_TIMEOUT_MS: '9000' }, 'DB_LOCK_TIMEOUT_MS'],
    [{ ...base, STATUS_MAP: '1=WIN' }, 'STATUS_MAP'],
    [{ ...base, AMOUNT_SCALE: '3' }, 'AMOUNT_SCALE'],
    [{ ...base, SPORTAPI_WEBHOOK_SECRETS: ' , ' }, 'SPORTAPI_WEBHOOK_SECRETS'],
    [{ ...base, SPORTAPI_BASE_URL: 'ftp://sportapi' }, 'SPORTAPI_BASE_URL'],
    [{ ...base, SPORTAPI_COUPON_PATH: '/coupons/:code' }, 'SPORTAPI_COUPON_PATH'],
    [{ ...base, SPORTAPI_TIMEOUT_MS: '10' }, 'SPORTAPI_TIMEOUT_MS'],
    [{ ...base, RECONCILE_AFTER: 'soon' }, 'RECONCILE_AFTER'],
    [{ ...base, RECONCILE_AFTER: '-5m' }, 'RECONCILE_AFTER'],
    [{ ...base, RECONCILE_AFTER: 'off' }, 'RECONCILE_AFTER'],
    [{ ...base, RECONCILE_INTERVAL: '1.5' }, 'RECONCILE_INTERVAL'],
    [{ ...base, RECONCILE_BATCH_SIZE: '0' }, 'RECONCILE_BATCH_SIZE'],
    [{ ...base, CALLBACK_MODE: 'queue' }, 'CALLBACK_MODE'],
    [{ ...base, INBOX_CONCURRENCY: '0' }, 'INBOX_CONCURRENCY'],
    [{ ...base, INBOX_POLL_INTERVAL_MS: '5' }, 'INBOX_POLL_INTERVAL_MS'],
    [{ ...base, INBOX_MAX_ATTEMPTS: '0' }, 'INBOX_MAX_ATTEMPTS'],
    [{ ...base, INBOX_RETRY_BASE_MS: '1000', INBOX_RETRY_MAX_MS: '500' }, 'INBOX_RETRY_MAX_MS'],
  ])('a wrong or missing variable stops with its name (%#)', (env, name) => {
    expect(() => loadConfig(env as NodeJS.ProcessEnv)).toThrow(name);
  });

  it.each([
    [
      { ...base, SPORTAPI_WEBHOOK_SECRETS: 'abc' },
      'SPORTAPI_WEBHOOK_SECRETS: secret 1 of 1 is shorter than 16 characters (e.g. openssl rand -hex 32)',
    ],
    [
      { ...base, SPORTAPI_WEBHOOK_SECRETS: `${SECRET},abc,${'x'.repeat(15)}` },
      'SPORTAPI_WEBHOOK_SECRETS: secret 2, 3 of 3 is shorter than 16 characters (e.g. openssl rand -hex 32)',
    ],
    [
      { ...base, OPS_API_KEYS: 'abc' },
      'OPS_API_KEYS: entry 1: the secret must be at least 16 visible ASCII characters, no spaces',
    ],
  ])('a secret shorter than 16 characters stops the start, named by position (%#)', (env, line) => {
    expect(() => loadConfig(env)).toThrow(new Error(`Invalid configuration:\n  - ${line}`));
    expect(() => loadConfig({ ...env, SPORTAPI_WEBHOOK_SECRETS: 'x'.repeat(16) })).not.toThrow(/WEBHOOK/);
  });

  it('defaults to inline mode; reads the inbox settings', () => {
    expect(loadConfig(base).inbox).toMatchObject({
      callbackMode: 'inline',
      inboxPollIntervalMs: 500,
      inboxConcurrency: 8,
      inboxMaxAttempts: 10,
      inboxRetryBaseMs: 1000,
      inboxRetryMaxMs: 300_000,
    });
    expect(
      loadConfig({
        ...base,
        CALLBACK_MODE: 'inbox',
        INBOX_POLL_INTERVAL_MS: '250',
        INBOX_CONCURRENCY: '4',
        INBOX_MAX_ATTEMPTS: '5',
        INBOX_RETRY_BASE_MS: '200',
        INBOX_RETRY_MAX_MS: '60000',
      }).inbox,
    ).toMatchObject({
      callbackMode: 'inbox',
      inboxPollIntervalMs: 250,
      inboxConcurrency: 4,
      inboxMaxAttempts: 5,
      inboxRetryBaseMs: 200,
      inboxRetryMaxMs: 60_000,
    });
  });

  it('reads a configured status map', () => {
    expect(
      loadConfig({ ...base, STATUS_MAP: '1:PENDING, 7:WIN, 15:RECALCULATION' }).settlement.statusMap,
    ).toEqual({
      1: 'PENDING',
      7: 'WIN',
      15: 'RECALCULATION',
    });
  });

  it('polling is off without SPORTAPI_BASE_URL; reconciliation defaults of CONTRACT §2/§9', () => {
    const c = loadConfig(base);
    expect(c.sportApi).toEqual({
      baseUrl: undefined,
      couponPath: '/coupons/{coupon_code}',
      apiKey: undefined,
      authHeader: 'authorization',
      timeoutMs: 5000,
      retries: 2,
    });
    // 90 min: after the sender's last retry (1 + 5 + 15 + 60 min after the first attempt).
    expect(c.reconciliation).toEqual({ intervalMs: 300_000, afterMs: 5_400_000, batchSize: 100 });
  });

  it.each([
    ['90m', 5_400_000],
    ['1.5h', 5_400_000],
    ['30s', 30_000],
    ['5400000', 5_400_000],
    ['0', 0],
  ])('reads RECONCILE_AFTER=%s as %d ms', (value, expected) => {
    expect(loadConfig({ ...base, RECONCILE_AFTER: value }).reconciliation.afterMs).toBe(expected);
  });

  it.each(['off', 'OFF', 'false', '0'])('RECONCILE_INTERVAL=%s disables the scheduled runs', (value) => {
    expect(loadConfig({ ...base, RECONCILE_INTERVAL: value }).reconciliation.intervalMs).toBe(0);
  });

  it('reads the SportAPI client settings', () => {
    const c = loadConfig({
      ...base,
      SPORTAPI_BASE_URL: 'https://api.sportapi.example/v2/',
      SPORTAPI_COUPON_PATH: '/partner/coupon/{coupon_code}',
      SPORTAPI_API_KEY: 'key',
      SPORTAPI_AUTH_HEADER: 'X-Api-Key',
      SPORTAPI_RETRIES: '0',
    });
    expect(c.sportApi).toMatchObject({
      baseUrl: 'https://api.sportapi.example/v2',
      couponPath: '/partner/coupon/{coupon_code}',
      apiKey: 'key',
      authHeader: 'x-api-key',
      retries: 0,
    });
  });

  describe('background-work governor (docs/background-work.md)', () => {
    it('is on by default: answers p99 of 500 ms, event loop 200 ms, a 2 s window', () => {
      expect(loadConfig(base).background).toEqual({
        enabled: true,
        targetMs: 500,
        eventLoopDelayMs: 200,
        windowMs: 2000,
      });
      expect(
        loadConfig({ ...base, BACKGROUND_GOVERNOR: '0', BACKGROUND_TARGET_MS: '250' }).background,
      ).toMatchObject({ enabled: false, targetMs: 250 });
    });

    it('refuses a target above half the deadline, naming the variable', () => {
      expect(() =>
        loadConfig({ ...base, CALLBACK_DEADLINE_MS: '2000', BACKGROUND_TARGET_MS: '1500' }),
      ).toThrow(/BACKGROUND_TARGET_MS must be at most half of CALLBACK_DEADLINE_MS/);
      expect(() => loadConfig({ ...base, BACKGROUND_WINDOW_MS: '10' })).toThrow(/BACKGROUND_WINDOW_MS/);
      expect(() => loadConfig({ ...base, WALLET_BATCH_SIZE: '0' })).toThrow(/WALLET_BATCH_SIZE/);
    });
  });

  describe('wallet (docs/wallet.md)', () => {
    const WALLET = { WALLET_URL: 'https://wallet.example/api/', WALLET_SECRET: 'wallet-secret-0123456789' };

    it('no WALLET_URL nor WALLET_CONNECTOR: no connector, no operation pushed', () => {
      expect(loadConfig(base).wallet).toEqual({
        connector: undefined,
        url: undefined,
        secret: undefined,
        operationTypes: [],
        timeoutMs: 5000,
        retryForMs: 86_400_000,
        retryBaseMs: 1000,
        retryMaxMs: 300_000,
        concurrency: 8,
        claimSize: 8,
        batchSize: 1,
        pollIntervalMs: 250,
      });
    });

    it('WALLET_URL selects the http connector; final credits and recalculation debits by default', () => {
      expect(loadConfig({ ...base, ...WALLET, WALLET_RETRY_FOR: '2h' }).wallet).toMatchObject({
        connector: 'http',
        url: 'https://wallet.example/api',
        secret: 'wallet-secret-0123456789',
        operationTypes: ['final_credit', 'recalculation_debit'],
        retryForMs: 7_200_000,
      });
      expect(
        loadConfig({
          ...base,
          ...WALLET,
          WALLET_OPERATION_TYPES: 'final_credit, recalculation_debit,deposit,withdrawal',
        }).wallet.operationTypes,
      ).toEqual(['final_credit', 'recalculation_debit', 'deposit', 'withdrawal']);
      expect(loadConfig({ ...base, ...WALLET, WALLET_CONNECTOR: 'none' }).wallet).toMatchObject({
        connector: undefined,
        operationTypes: [],
      });
      expect(loadConfig({ ...base, WALLET_CONNECTOR: 'partner-table' }).wallet.connector).toBe(
        'partner-table',
      );
    });

    it('refuses what cannot work, naming the variable', () => {
      const refused = (env: Record<string, string>) => () => loadConfig({ ...base, ...env });
      expect(refused({ WALLET_URL: WALLET.WALLET_URL })).toThrow(
        'WALLET_SECRET: required by the http wallet connector',
      );
      expect(refused({ WALLET_CONNECTOR: 'http', WALLET_SECRET: WALLET.WALLET_SECRET })).toThrow(
        'WALLET_URL: required by the http wallet connector',
      );
      expect(refused({ ...WALLET, WALLET_SECRET: 'short' })).toThrow(/WALLET_SECRET/);
      expect(refused({ ...WALLET, WALLET_URL: 'ftp://wallet' })).toThrow(/WALLET_URL/);
      expect(refused({ ...WALLET, WALLET_OPERATION_TYPES: 'final_credit,bonus' })).toThrow(
        /WALLET_OPERATION_TYPES must be comma-separated operation types .*: bonus/,
      );
      expect(refused({ ...WALLET, WALLET_CONNECTOR: 'My Wallet' })).toThrow(/WALLET_CONNECTOR/);
      expect(refused({ ...WALLET, WALLET_RETRY_FOR: '10ms' })).toThrow(
        /WALLET_RETRY_FOR must be at least 1s/,
      );
      expect(refused({ ...WALLET, WALLET_RETRY_BASE_MS: '5000', WALLET_RETRY_MAX_MS: '1000' })).toThrow(
        /WALLET_RETRY_MAX_MS must not be below WALLET_RETRY_BASE_MS/,
      );
    });
  });
});
