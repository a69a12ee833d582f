import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { createTestApp, expectError, ops } from '../support/test-app.js';
import type { TestContext } from '../support/test-app.js';

// The operator console's pages at /ops (issue 30, docs/console.md) on a stand-in build: what is
// served where, with which headers; and GET /auth/whoami, which the console signs in with. The
// real build in chromium: test/browser/console*.spec.ts.

const CSP =
  "default-src 'self';script-src 'self';script-src-attr 'none';style-src 'self';img-src 'self' data:;" +
  "font-src 'self';connect-src 'self';object-src 'none';base-uri 'self';form-action 'self';frame-ancestors 'none'";
const INDEX =
  '<!doctype html><title>console</title><script type="module" src="/ops/assets/app-1.js"></script>';

describe('the operator console at /ops', () => {
  let t: TestContext;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'console-pages-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets', 'app-1.js'), 'export {};\n');
    writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    t = await createTestApp({ CONSOLE_DIR: dir });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const get = (path: string) => request(t.app.getHttpServer()).get(path);

  it.each([
    '/ops',
    '/ops/',
    '/ops/coupons/000000000272',
    '/ops/batches/b%2F1%3Fx',
    '/ops/coupons/favicon.svg',
    '/OPS/quarantine/4',
  ])('GET %s: the page, never cached, with the console CSP', async (path) => {
    const res = await get(path);
    expect([res.status, res.text, res.headers['content-type']]).toEqual([
      200,
      INDEX,
      'text/html; charset=utf-8',
    ]);
    expect(res.headers['content-security-policy']).toBe(CSP);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('assets: cached for a year with the console CSP; a missing one is a 404, not the page', async () => {
    const asset = await get('/ops/assets/app-1.js');
    expect([asset.status, asset.headers['content-type'], asset.headers['cache-control']]).toEqual([
      200,
      'text/javascript; charset=utf-8',
      'public, max-age=31536000, immutable',
    ]);
    expect(asset.headers['content-security-policy']).toBe(CSP);
    expectError(await get('/ops/assets/app-2.js'), 404, 'not_found');
    expect((await get('/ops/favicon.svg')).headers['content-type']).toBe('image/svg+xml');
  });

  it('only GET and HEAD: a POST under /ops is not a page', async () => {
    const res = await request(t.app.getHttpServer()).post('/ops/coupons').send({});
    expect(res.status).toBe(404);
    expect((await request(t.app.getHttpServer()).head('/ops/wallet')).status).toBe(200);
  });

  it('other paths keep helmet’s default policy', async () => {
    const res = await get('/health/live');
    expect(res.headers['content-security-policy']).toMatch(/^default-src 'self';/);
    expect(res.headers['content-security-policy']).not.toBe(CSP);
  });

  it('GET /auth/whoami: the key’s name and scopes, never its secret; scope read', async () => {
    const operator = await ops(t.app, 'operator').get('/auth/whoami');
    // With what the receiver is set up to do: here no SportAPI polling, no wallet connector,
    // the default STATUS_MAP (CONTRACT §6).
    const receiver = {
      polling: false,
      scheduledReconciliation: false,
      walletConnector: null,
      statusKinds: { '1': 'PENDING', '2': 'WIN', '3': 'REFUND', '4': 'LOSS', '15': 'RECALCULATION' },
    };
    expect([operator.status, operator.body]).toEqual([
      200,
      { name: 'operator', scopes: ['read', 'operate'], receiver },
    ]);
    const legacy = await ops(t.app).get('/auth/whoami');
    expect(legacy.body).toEqual({
      name: 'key-1',
      scopes: ['read', 'register', 'money', 'operate'],
      receiver,
    });
    const placement = await ops(t.app, 'placement').get('/auth/whoami');
    expectError(placement, 403, 'insufficient_scope');
    expect(placement.body.error.message).toBe('this route needs scope read; key placement has register');
    expectError(await get('/auth/whoami'), 401, 'unauthorized');
  });
});

describe('the operator console without a build', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({
      CONSOLE_DIR: join(tmpdir(), 'no-such-console-build'),
      // Nothing listens on port 9: the app is only asked what it is set up to do.
      SPORTAPI_BASE_URL: 'http://127.0.0.1:9',
      WALLET_URL: 'http://127.0.0.1:9',
      WALLET_SECRET: 'test-wallet-secret',
      STATUS_MAP: '1:PENDING,2:WIN,4:LOSS,7:WIN',
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('GET /auth/whoami says SportAPI polling is on, the wallet connector and STATUS_MAP', async () => {
    const res = await ops(t.app, 'reader').get('/auth/whoami');
    expect([res.status, res.body]).toEqual([
      200,
      {
        name: 'reader',
        scopes: ['read'],
        receiver: {
          polling: true,
          scheduledReconciliation: true,
          walletConnector: 'http',
          statusKinds: { '1': 'PENDING', '2': 'WIN', '4': 'LOSS', '7': 'WIN' },
        },
      },
    ]);
  });

  it('/ops says how to build it', async () => {
    const res = await request(t.app.getHttpServer()).get('/ops/coupons');
    expect([res.status, res.headers['content-type'], res.text]).toEqual([
      404,
      'text/plain; charset=utf-8',
      `the operator console is not built in ${join(tmpdir(), 'no-such-console-build')}: run npm run build (docs/console.md)\n`,
    ]);
  });
});
