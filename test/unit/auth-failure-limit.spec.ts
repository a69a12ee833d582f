import { jest } from '@jest/globals';
import { clientAddressKey, PartnerAuthenticator } from '../../src/auth/partner-authenticator.js';
import { loadConfig } from '../../src/app.config.js';

// Failed authentications per client address (CONTRACT §10, issue 16): AUTH_FAILURE_LIMIT failures
// in AUTH_FAILURE_WINDOW, then 429 with Retry-After for every request of that address until the
// window ends; other addresses are not affected; an IPv6 host counts by its /64.

const GOOD = 'reader-secret-0123456789abcdef';

describe('failed-authentication limit per client address', () => {
  let auth: PartnerAuthenticator;
  const headers: Record<string, string> = {};
  const res = { setHeader: (name: string, value: string) => void (headers[name] = value) };
  const attempt = (address: string, secret: string) =>
    auth
      .authenticate(
        { headers: { authorization: `Bearer ${secret}` }, socket: { remoteAddress: address } } as never,
        res as never,
        'read',
      )
      .then(
        (key) => `ok ${key.name}`,
        (err: { code: string }) => `${err.code}${headers['Retry-After'] ? ` ${headers['Retry-After']}` : ''}`,
      )
      .finally(() => delete headers['Retry-After']);

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-30T12:00:00Z') });
    auth = new PartnerAuthenticator(
      loadConfig({
        SPORTAPI_WEBHOOK_SECRETS: 'test-webhook-secret-1',
        OPS_API_KEYS: `reader:read:${GOOD}`,
        AUTH_FAILURE_LIMIT: '2',
        AUTH_FAILURE_WINDOW: '30s',
      }),
    );
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('blocks the address after the limit, with the seconds left of the window; the window ends it', async () => {
    expect(await attempt('10.0.0.1', 'guess-1')).toBe('unauthorized');
    jest.advanceTimersByTime(10_000);
    expect(await attempt('10.0.0.1', 'guess-2')).toBe('unauthorized');
    expect(await attempt('10.0.0.1', GOOD)).toBe('too_many_auth_failures 20');
    jest.advanceTimersByTime(19_500);
    expect(await attempt('10.0.0.1', GOOD)).toBe('too_many_auth_failures 1');
    // Another address is not affected, nor is the same host over IPv4-mapped IPv6 spared.
    expect(await attempt('10.0.0.2', GOOD)).toBe('ok reader');
    expect(await attempt('::ffff:10.0.0.1', GOOD)).toBe('too_many_auth_failures 1');
    jest.advanceTimersByTime(600);
    expect(await attempt('10.0.0.1', GOOD)).toBe('ok reader');
    expect(await attempt('10.0.0.1', 'guess-3')).toBe('unauthorized');
  });

  it('counts an IPv6 host by its /64', async () => {
    expect(await attempt('2001:db8:1:2::a', 'guess-1')).toBe('unauthorized');
    expect(await attempt('2001:db8:1:2:ffff::b', 'guess-2')).toBe('unauthorized');
    expect(await attempt('2001:db8:1:2::c', GOOD)).toBe('too_many_auth_failures 30');
    expect(await attempt('2001:db8:1:3::a', GOOD)).toBe('ok reader');
  });

  it.each([
    ['10.1.2.3', '10.1.2.3'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['2001:db8:aa:bb:1:2:3:4', '2001:db8:aa:bb::/64'],
    ['::1', '::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    [undefined, 'unknown'],
  ])('keys %s as %s', (address, key) => {
    expect(clientAddressKey(address)).toBe(key);
  });
});
