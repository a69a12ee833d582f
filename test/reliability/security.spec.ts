import { createHash, createHmac } from 'node:crypto';
import { OPS_KEY, SCOPED_KEYS, SECRET, sign, TEST_OPS_API_KEYS } from '../support/test-app.js';
import { sleep } from '../support/wait.js';
import { fetchRead } from '../support/http.js';
import { partner, portRange, post, startReceiver, stopReceiver, useReceivers } from './support/receiver.js';

// CONTRACT §3/§4 (signature over the raw bytes), §8 (badly signed bodies are not stored, logged
// without the body), §10 (bearer-key partner API, scoped keys, the failed-authentication limit):
// spawned receivers, their whole output captured.

const [PORT, LIMITED_PORT] = portRange(20, 2);
const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');

describe('security of the running receiver (CONTRACT §3, §8, §10)', () => {
  // This file sends wrong keys on purpose: the failed-authentication limit has its own receiver.
  const suite = useReceivers([PORT], {
    env: { NODE_ENV: 'development', OPS_API_KEYS: TEST_OPS_API_KEYS, AUTH_FAILURE_LIMIT: '1000' },
    poolSize: 1,
  });
  /** Every credential-like value sent or configured; none may appear in the output. */
  const secrets = new Set<string>([
    SECRET,
    OPS_KEY,
    ...Object.values(SCOPED_KEYS).flatMap((k) => [k.secret, sha256Hex(k.secret)]),
  ]);

  it('every partner API route refuses a missing or wrong bearer key with 401', async () => {
    const doc = (await (await fetch(`${suite.receiver.url}/docs-json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const routes = Object.entries(doc.paths)
      .filter(([path]) => !/^\/(sportapi|health|metrics|docs)/.test(path))
      .flatMap(([path, methods]) =>
        Object.keys(methods).map((m) => [m.toUpperCase(), path.replace(/\{[^}]+\}/g, 'X1')]),
      );
    expect(routes.length).toBeGreaterThanOrEqual(5);
    const wrong = [
      undefined,
      '',
      'Bearer',
      `Bearer ${OPS_KEY.slice(0, -1)}`,
      `Bearer ${OPS_KEY}x`,
      `Basic ${Buffer.from(`u:${OPS_KEY}`).toString('base64')}`,
      `Bearer ${OPS_KEY.toUpperCase()}`,
      'Bearer wrong-key-7f3a9c',
    ];
    for (const w of wrong) if (w) secrets.add(w);
    const answers: string[] = [];
    for (const [method, path] of routes) {
      for (const authorization of wrong) {
        const res = await fetch(`${suite.receiver.url}${path}`, {
          method,
          headers: {
            'content-type': 'application/json',
            'idempotency-key': 'k-1',
            ...(authorization === undefined ? {} : { authorization }),
          },
          body: method === 'GET' ? undefined : '{}',
        });
        const body = (await res.json()) as { error?: { code?: string } };
        answers.push(`${method} ${path} ${res.status} ${body.error?.code}`);
      }
    }
    expect(answers.filter((a) => !a.endsWith(' 401 unauthorized'))).toEqual([]);
    // With the key the same routes are reachable (404/400/200/201, never 401).
    const ok = await partner(suite.receiver.url, 'GET', '/accounts/nobody');
    expect(ok.status).toBe(404);
  });

  it('secrets, signatures and bearer keys never appear in the logs', async () => {
    // Good, wrong and malformed signatures; bodies refused and accepted; a conflict; partner calls.
    const body = JSON.stringify({
      batchId: 'sec-1',
      couponCount: 1,
      coupons: [{ coupon_code: 'S1', status: 1, realWin: null, events: [{ uuid: 'S1-e1', status: 0 }] }],
    });
    const good = sign(body);
    const wrongSig = `sha256=${createHmac('sha256', 'not-the-secret').update(body).digest('hex')}`;
    const otherSecret = 'rel-unknown-secret-41c2';
    const otherSig = `sha256=${createHmac('sha256', otherSecret).update(body).digest('hex')}`;
    for (const s of [good, wrongSig, otherSig, good.slice(7), wrongSig.slice(7), otherSecret]) secrets.add(s);
    expect((await post(suite.receiver.url, body)).status).toBe(200);
    for (const sig of [wrongSig, otherSig, 'sha256=zz', otherSecret]) {
      expect((await post(suite.receiver.url, body, { headers: { 'x-signature': sig } })).status).toBe(401);
    }
    const conflict = body.replace('"status":0', '"status":1');
    const conflictSig = sign(conflict);
    secrets.add(conflictSig);
    secrets.add(conflictSig.slice(7));
    expect((await post(suite.receiver.url, conflict)).status).toBe(409);
    const invalid = '{"batchId":"sec-2","couponCount":2,"coupons":[]}';
    secrets.add(sign(invalid));
    secrets.add(sign(invalid).slice(7));
    expect((await post(suite.receiver.url, invalid)).status).toBe(400);
    // Scoped keys, plain and hashed: allowed, refused for their scope, moving money.
    const as = (key: keyof typeof SCOPED_KEYS) => ({ authorization: `Bearer ${SCOPED_KEYS[key].secret}` });
    const reader = await partner(suite.receiver.url, 'GET', '/accounts/sec-1', undefined, as('reader'));
    const refused = await partner(
      suite.receiver.url,
      'POST',
      '/accounts/sec-1/adjustments',
      {},
      as('reader'),
    );
    const deposit = await partner(
      suite.receiver.url,
      'POST',
      '/accounts/sec-1/adjustments',
      { amount: '5.00', currency: 'EUR', reason: 'security test' },
      { ...as('cashier'), 'idempotency-key': 'sec-dep-1' },
    );
    const reconcile = await partner(
      suite.receiver.url,
      'POST',
      '/coupons/S1/reconcile',
      {},
      as('hashedOperator'),
    );
    expect([reader, refused, deposit, reconcile].map((r) => r.status)).toEqual([404, 403, 201, 501]);
    expect(deposit.body.actor).toBe('cashier');
    // Give the process a moment to flush its logs.
    await sleep(300);
    const out = suite.receiver.output();
    expect(out.length).toBeGreaterThan(0);
    expect([...secrets].filter((s) => s.length >= 8 && out.includes(s))).toEqual([]);
    // Bodies of badly signed requests are not logged either (CONTRACT §8).
    expect(out).not.toContain('S1-e1');
    // The request lines name the key (never its secret); the bare key is warned about once.
    const completed = out
      .split('\n')
      .filter((l) => l.includes('"msg":"request completed"') && l.includes('/sec-1'))
      .map((l) => JSON.parse(l) as { actor?: string; res: { statusCode: number } })
      .map((l) => `${l.res.statusCode} ${l.actor}`);
    expect(completed).toEqual(['404 reader', '403 reader', '201 cashier']);
    expect(out.split('\n').filter((l) => l.includes('bare key')).length).toBe(1);
  });

  it('failed authentications per address: the limit answers 429 with Retry-After to unknown keys only, never on the callback', async () => {
    const limited = await startReceiver(LIMITED_PORT, suite.db.url, {
      OPS_API_KEYS: TEST_OPS_API_KEYS,
      AUTH_FAILURE_LIMIT: '2',
      AUTH_FAILURE_WINDOW: '5m',
    });
    try {
      const wrong = { authorization: 'Bearer guessed-key-0000000000' };
      const answers = [
        await partner(limited.url, 'GET', '/accounts/nobody', undefined, wrong),
        await partner(limited.url, 'GET', '/accounts/nobody', undefined, wrong),
        await partner(limited.url, 'GET', '/accounts/nobody', undefined, wrong),
        // A known key of the same address still passes (issue 38).
        await partner(limited.url, 'GET', '/accounts/nobody'),
      ];
      expect(answers.map((a) => `${a.status} ${(a.body.error as { code: string }).code}`)).toEqual([
        '401 unauthorized',
        '401 unauthorized',
        '429 too_many_auth_failures',
        '404 not_found',
      ]);
      const res = await fetchRead(`${limited.url}/accounts/nobody`, {
        headers: { authorization: 'Bearer another-guess-0000000000' },
      });
      const retryAfter = Number(res.headers.get('retry-after'));
      expect({ status: res.status, retryAfter: retryAfter >= 1 && retryAfter <= 300 }).toEqual({
        status: 429,
        retryAfter: true,
      });
      const body = JSON.stringify({
        batchId: 'sec-limit-1',
        couponCount: 1,
        coupons: [{ coupon_code: 'S9', status: 1, realWin: null, events: [] }],
      });
      expect((await post(limited.url, body)).status).toBe(200);
    } finally {
      await stopReceiver(limited);
    }
  });

  it('partner API and callback answers carry security headers (helmet)', async () => {
    const partnerRes = await fetchRead(`${suite.receiver.url}/accounts/nobody`, {
      headers: { authorization: `Bearer ${OPS_KEY}` },
    });
    const callbackRes = await fetchRead(`${suite.receiver.url}/sportapi/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    for (const res of [partnerRes, callbackRes]) {
      expect({
        nosniff: res.headers.get('x-content-type-options'),
        frame: res.headers.get('x-frame-options'),
        hsts: res.headers.get('strict-transport-security'),
        csp: res.headers.get('content-security-policy')?.includes("default-src 'self'"),
        referrer: res.headers.get('referrer-policy'),
        poweredBy: res.headers.get('x-powered-by'),
      }).toEqual({
        nosniff: 'nosniff',
        frame: 'SAMEORIGIN',
        hsts: 'max-age=31536000; includeSubDomains',
        csp: true,
        referrer: 'no-referrer',
        poweredBy: null,
      });
    }
    // Swagger UI still loads (no CSP there).
    const docs = await fetchRead(`${suite.receiver.url}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-security-policy')).toBeNull();
    expect(docs.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
