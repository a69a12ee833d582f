import { jest } from '@jest/globals';

// CONTRACT §4 step 1 (signature compared in constant time) and §10 (bearer keys): every
// comparison of a secret goes through crypto.timingSafeEqual on buffers of equal length, for
// every configured secret/key (no early exit that would tell which one matched, or how long
// the expected value is).

const calls: [Buffer, Buffer][] = [];
jest.unstable_mockModule('node:crypto', () => {
  const real = jest.requireActual<typeof import('node:crypto')>('node:crypto');
  const timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    calls.push([a as Buffer, b as Buffer]);
    return real.timingSafeEqual(a, b);
  };
  return { ...real, default: { ...real, timingSafeEqual }, timingSafeEqual };
});

const { createHash, createHmac } = await import('node:crypto');
const { secureEquals } = await import('../../src/platform/common/secure-compare.js');
const { verifySignature } = await import('../../src/intake/callbacks/signature.guard.js');

const lengths = () => calls.map(([a, b]) => `${a.length}/${b.length}`);

describe('constant-time comparison of secrets (CONTRACT §4, §10)', () => {
  beforeEach(() => calls.splice(0));

  it('secureEquals compares 32-byte digests with timingSafeEqual, whatever the input lengths', () => {
    expect(secureEquals('a', 'a much longer value')).toBe(false);
    expect(secureEquals('same', 'same')).toBe(true);
    expect(secureEquals(Buffer.alloc(0), Buffer.alloc(1000, 1))).toBe(false);
    expect(lengths()).toEqual(['32/32', '32/32', '32/32']);
  });

  it('verifySignature compares against every secret, each with timingSafeEqual (no early exit)', () => {
    const body = Buffer.from('{"batchId":"x"}');
    const secrets = ['first-secret', 'second-secret', 'third-secret'];
    const good = createHmac('sha256', 'first-secret').update(body).digest('hex');
    expect(verifySignature(body, `sha256=${good}`, secrets)).toBe(true);
    expect(lengths()).toEqual(['32/32', '32/32', '32/32']);
    calls.splice(0);
    expect(verifySignature(body, `sha256=${'0'.repeat(64)}`, secrets)).toBe(false);
    expect(lengths()).toEqual(['32/32', '32/32', '32/32']);
  });

  it('PartnerAuthenticator compares against every key with timingSafeEqual on equal lengths', async () => {
    const { loadConfig } = await import('../../src/app.config.js');
    const { PartnerAuthenticator } = await import('../../src/platform/auth/partner-authenticator.js');
    const plain = 'a-much-longer-key-two-0123456789';
    const hashed = 'third-key-stored-as-its-sha256-digest';
    const auth = new PartnerAuthenticator(
      loadConfig({
        SPORTAPI_WEBHOOK_SECRETS: 'test-webhook-secret-1',
        OPS_API_KEYS: `bare-key-one-0123,two:read:${plain},three:money:sha256:${createHash('sha256').update(hashed).digest('hex')}`,
      }).auth,
    );
    const req = (authorization: string) =>
      ({ headers: { authorization }, socket: { remoteAddress: '127.0.0.1' } }) as never;
    const res = { setHeader: () => undefined } as never;
    calls.splice(0);
    expect(await auth.authenticate(req('Bearer bare-key-one-0123'), res, 'read')).toEqual({
      name: 'key-1',
      scopes: ['read', 'register', 'money', 'operate'],
    });
    expect(lengths()).toEqual(['32/32', '32/32', '32/32']);
    calls.splice(0);
    expect((await auth.authenticate(req(`Bearer ${hashed}`), res, 'money')).name).toBe('three');
    expect(lengths()).toEqual(['32/32', '32/32', '32/32']);
    calls.splice(0);
    await expect(auth.authenticate(req('Bearer k'), res, 'read')).rejects.toThrow(
      'a valid bearer key is required',
    );
    expect(lengths()).toEqual(['32/32', '32/32', '32/32']);
  });
});
