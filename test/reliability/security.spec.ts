import { createHmac } from 'node:crypto';
import { OPS_KEY, SECRET, sign } from '../support/test-app.js';
import { sleep } from '../support/wait.js';
import { partner, portRange, post, useReceivers } from './support/receiver.js';

// CONTRACT §3/§4 (signature over the raw bytes), §8 (badly signed bodies are not stored, logged
// without the body), §10 (bearer-key partner API): a spawned receiver, its whole output captured.

const [PORT] = portRange(20);

describe('security of the running receiver (CONTRACT §3, §8, §10)', () => {
  const suite = useReceivers([PORT], { env: { NODE_ENV: 'development' }, poolSize: 1 });
  /** Every credential-like value sent or configured; none may appear in the output. */
  const secrets = new Set<string>([SECRET, OPS_KEY]);

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
    // Give the process a moment to flush its logs.
    await sleep(300);
    const out = suite.receiver.output();
    expect(out.length).toBeGreaterThan(0);
    expect([...secrets].filter((s) => s.length >= 8 && out.includes(s))).toEqual([]);
    // Bodies of badly signed requests are not logged either (CONTRACT §8).
    expect(out).not.toContain('S1-e1');
  });

  it('partner API and callback answers carry security headers (helmet)', async () => {
    const partnerRes = await fetch(`${suite.receiver.url}/accounts/nobody`, {
      headers: { authorization: `Bearer ${OPS_KEY}` },
    });
    const callbackRes = await fetch(`${suite.receiver.url}/sportapi/callback`, {
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
    const docs = await fetch(`${suite.receiver.url}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-security-policy')).toBeNull();
    expect(docs.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
