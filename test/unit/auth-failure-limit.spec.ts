import { jest } from '@jest/globals';
import { clientAddressKey, PartnerAuthenticator } from '../../src/platform/auth/partner-authenticator.js';
import { loadConfig } from '../../src/app.config.js';
import { clientAddressOf } from '../../src/platform/observability/client-address.js';
import { REQUIRED_ENV } from '../support/secrets.js';

// Failed authentications per client address (CONTRACT §10, issues 16 and 38): AUTH_FAILURE_LIMIT
// failures in AUTH_FAILURE_WINDOW, then 429 with Retry-After for a missing or unknown key of that
// address until the window ends, while a known key still passes (a shared address is not locked
// out by one client's wrong keys); other addresses are not affected; an IPv6 host counts by its /64.

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
      }).auth,
    );
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('refuses unknown keys of the address after the limit, for the rest of the window; a known key still passes', async () => {
    expect(await attempt('10.0.0.1', 'guess-1')).toBe('unauthorized');
    jest.advanceTimersByTime(10_000);
    expect(await attempt('10.0.0.1', 'guess-2')).toBe('unauthorized');
    expect(await attempt('10.0.0.1', GOOD)).toBe('ok reader');
    expect(await attempt('10.0.0.1', 'guess-3')).toBe('too_many_auth_failures 20');
    jest.advanceTimersByTime(19_500);
    expect(await attempt('10.0.0.1', 'guess-4')).toBe('too_many_auth_failures 1');
    expect(await attempt('10.0.0.1', GOOD)).toBe('ok reader');
    // Another address is not affected, nor is the same host over IPv4-mapped IPv6 spared.
    expect(await attempt('10.0.0.2', 'guess-1')).toBe('unauthorized');
    expect(await attempt('::ffff:10.0.0.1', 'guess-5')).toBe('too_many_auth_failures 1');
    jest.advanceTimersByTime(600);
    expect(await attempt('10.0.0.1', 'guess-6')).toBe('unauthorized');
  });

  it('goes by Express’s req.ip (TRUSTED_PROXIES applied) before the TCP peer', async () => {
    const viaBalancer = (ip: string, secret: string) =>
      auth
        .authenticate(
          {
            ip,
            headers: { authorization: `Bearer ${secret}` },
            socket: { remoteAddress: '10.9.9.9' },
          } as never,
          res as never,
          'read',
        )
        .then(
          (key) => `ok ${key.name}`,
          (err: { code: string }) => err.code,
        )
        .finally(() => delete headers['Retry-After']);
    expect(await viaBalancer('203.0.113.1', 'guess-1')).toBe('unauthorized');
    expect(await viaBalancer('203.0.113.1', 'guess-2')).toBe('unauthorized');
    expect(await viaBalancer('203.0.113.1', 'guess-3')).toBe('too_many_auth_failures');
    expect(await viaBalancer('203.0.113.2', 'guess-1')).toBe('unauthorized');
    expect(await attempt('10.9.9.9', 'guess-1')).toBe('unauthorized');
  });

  it('counts an IPv6 host by its /64', async () => {
    expect(await attempt('2001:db8:1:2::a', 'guess-1')).toBe('unauthorized');
    expect(await attempt('2001:db8:1:2:ffff::b', 'guess-2')).toBe('unauthorized');
    expect(await attempt('2001:db8:1:2::c', 'guess-3')).toBe('too_many_auth_failures 30');
    expect(await attempt('2001:db8:1:3::a', 'guess-1')).toBe('unauthorized');
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

describe('TRUSTED_PROXIES', () => {
  const required = REQUIRED_ENV;

  it('lists addresses, CIDR blocks and proxy-addr’s names; unset trusts none', () => {
    expect(loadConfig({ ...required }).http.trustedProxies).toEqual([]);
    expect(
      loadConfig({ ...required, TRUSTED_PROXIES: ' 10.0.0.0/8, 127.0.0.1 ,fd00::/8,loopback' }).http
        .trustedProxies,
    ).toEqual(['10.0.0.0/8', '127.0.0.1', 'fd00::/8', 'loopback']);
  });

  it('stops the start on an entry Express could not use, naming the variable and the entry', () => {
    expect(() => loadConfig({ ...required, TRUSTED_PROXIES: '10.0.0.0/33,127.0.0.1,balancer' })).toThrow(
      'Invalid configuration:\n  - TRUSTED_PROXIES: not an IP address, CIDR block or ' +
        'loopback/linklocal/uniquelocal: 10.0.0.0/33, balancer',
    );
  });
});

// The breaker's finding: a trusted hop that passes `X-Forwarded-For` on unchanged let any value
// (`garbage`, `5.5.5.5:1234`, 8 000 characters) become the logged address and a failure counter.
describe('clientAddressOf', () => {
  const req = (ip: string | undefined) =>
    ({ ip, socket: { remoteAddress: '127.0.0.2' } }) as unknown as Parameters<typeof clientAddressOf>[0];

  it.each(['203.0.113.7', '2001:db8::1', '::ffff:10.0.0.1'])('takes the forwarded address %s', (ip) => {
    expect(clientAddressOf(req(ip))).toBe(ip);
  });

  it.each(['garbage', 'unknown', '999.1.1.1', '5.5.5.5:1234', '', 'x'.repeat(8000)])(
    'takes the TCP peer instead of %s',
    (ip) => {
      expect(clientAddressOf(req(ip))).toBe('127.0.0.2');
    },
  );

  it('takes the TCP peer when Express gave no req.ip', () => {
    expect(clientAddressOf(req(undefined))).toBe('127.0.0.2');
  });
});
