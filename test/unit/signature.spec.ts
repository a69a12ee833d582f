import { createHmac } from 'node:crypto';
import { verifySignature } from '../../src/intake/callbacks/signature.guard.js';
import { secureEquals } from '../../src/platform/common/secure-compare.js';

const body = Buffer.from('{"batchId":"b-1","couponCount":1,"coupons":[]}');
const hex = (secret: string, bytes: Buffer = body) =>
  createHmac('sha256', secret).update(bytes).digest('hex');

describe('verifySignature (CONTRACT §3, §4 step 1)', () => {
  it('accepts sha256=<hex>, bare lowercase and uppercase hex', () => {
    expect(verifySignature(body, `sha256=${hex('s1')}`, ['s1'])).toBe(true);
    expect(verifySignature(body, hex('s1'), ['s1'])).toBe(true);
    expect(verifySignature(body, hex('s1').toUpperCase(), ['s1'])).toBe(true);
  });

  it('accepts any configured secret (rotation)', () => {
    expect(verifySignature(body, `sha256=${hex('new')}`, ['old', 'new'])).toBe(true);
    expect(verifySignature(body, `sha256=${hex('old')}`, ['old', 'new'])).toBe(true);
  });

  it('refuses a wrong secret, a changed byte, a missing or malformed header', () => {
    expect(verifySignature(body, `sha256=${hex('other')}`, ['s1'])).toBe(false);
    expect(verifySignature(Buffer.concat([body, Buffer.from(' ')]), `sha256=${hex('s1')}`, ['s1'])).toBe(
      false,
    );
    expect(verifySignature(body, undefined, ['s1'])).toBe(false);
    expect(verifySignature(body, '', ['s1'])).toBe(false);
    expect(verifySignature(body, 'sha256=', ['s1'])).toBe(false);
    expect(verifySignature(body, `sha1=${hex('s1')}`, ['s1'])).toBe(false);
    expect(verifySignature(body, `sha256=${hex('s1').slice(0, 63)}`, ['s1'])).toBe(false);
    expect(verifySignature(body, `sha256=${hex('s1')}00`, ['s1'])).toBe(false);
  });

  it('signs the exact bytes: re-serialised JSON does not match', () => {
    const pretty = Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 2));
    expect(verifySignature(pretty, `sha256=${hex('s1')}`, ['s1'])).toBe(false);
  });
});

describe('secureEquals', () => {
  it('compares values of any length', () => {
    expect(secureEquals('abc', 'abc')).toBe(true);
    expect(secureEquals('abc', 'abd')).toBe(false);
    expect(secureEquals('abc', 'abcd')).toBe(false);
    expect(secureEquals('', '')).toBe(true);
  });
});
