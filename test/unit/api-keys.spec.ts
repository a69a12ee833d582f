import { createHash } from 'node:crypto';
import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { PartnerAuthenticator } from '../../src/platform/auth/partner-authenticator.js';
import { loadConfig } from '../../src/app.config.js';
import { REQUIRED_ENV, SECRET } from '../support/secrets.js';

// OPS_API_KEYS (CONTRACT §10, least privilege): named, scoped keys with plain or hashed secrets,
// the bare legacy form, and start-up refusals that name the entry by position, never its secret.

const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const keysOf = (OPS_API_KEYS: string) =>
  loadConfig({ SPORTAPI_WEBHOOK_SECRETS: SECRET, OPS_API_KEYS }).auth.opsApiKeys.map((k) => ({
    name: k.name,
    scopes: k.scopes.join('+'),
    digest: k.digest.toString('hex'),
    legacy: k.legacy,
  }));
const refusal = (OPS_API_KEYS: string): string => {
  try {
    loadConfig({ SPORTAPI_WEBHOOK_SECRETS: SECRET, OPS_API_KEYS });
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('accepted');
};

const READER = 'reader-secret-0123456789abcdef';
const CASHIER = 'cashier-secret-0123456789abcdef';

describe('OPS_API_KEYS: named, scoped, rotatable keys (CONTRACT §10)', () => {
  it('reads name:scopes:secret with plain and sha256: secrets', () => {
    expect(
      keysOf(
        ` finance.auditors:read:${READER} , cashier-1:read+money:sha256:${hex(CASHIER).toUpperCase()},` +
          `ops_desk:operate+read+register:${'o'.repeat(16)}`,
      ),
    ).toEqual([
      { name: 'finance.auditors', scopes: 'read', digest: hex(READER), legacy: false },
      { name: 'cashier-1', scopes: 'read+money', digest: hex(CASHIER), legacy: false },
      { name: 'ops_desk', scopes: 'operate+read+register', digest: hex('o'.repeat(16)), legacy: false },
    ]);
  });

  it('keeps a bare entry as a key with every scope named key-<position>, next to named ones', () => {
    expect(keysOf(`old-bare-key-0001,cashier:money:${CASHIER},another-old-bare-key`)).toEqual([
      {
        name: 'key-1',
        scopes: 'read+register+money+operate',
        digest: hex('old-bare-key-0001'),
        legacy: true,
      },
      { name: 'cashier', scopes: 'money', digest: hex(CASHIER), legacy: false },
      {
        name: 'key-3',
        scopes: 'read+register+money+operate',
        digest: hex('another-old-bare-key'),
        legacy: true,
      },
    ]);
  });

  it('allows several keys with the same scopes (rotation), a scope listed twice once', () => {
    expect(keysOf(`cashier-2026a:money+money:${CASHIER},cashier-2026b:money:${READER}`)).toEqual([
      { name: 'cashier-2026a', scopes: 'money', digest: hex(CASHIER), legacy: false },
      { name: 'cashier-2026b', scopes: 'money', digest: hex(READER), legacy: false },
    ]);
  });

  it.each([
    [`a:read:${READER},a:money:${CASHIER}`, "entry 2: name a is also entry 1's"],
    [`a:read:${READER},b:money:${READER}`, 'entry 2: same secret as entry 1'],
    [`a:read:${READER},b:money:sha256:${hex(READER)}`, 'entry 2: same secret as entry 1'],
    [`${READER},b:money:${READER}`, 'entry 2: same secret as entry 1'],
    [`${READER},key-1:read:${CASHIER}`, "entry 2: name key-1 is also entry 1's"],
    [`a:read+admin:${READER}`, 'entry 1: scopes must be a +-joined set of read, register, money, operate'],
    [`a::${READER}`, 'entry 1: scopes must be a +-joined set of read, register, money, operate'],
    [`a:READ:${READER}`, 'entry 1: scopes must be a +-joined set of read, register, money, operate'],
    [`a:read:sha256:${hex(READER).slice(1)}`, 'entry 1: a hashed secret must be sha256: and 64 hex digits'],
    [`a:read:sha256:${'g'.repeat(64)}`, 'entry 1: a hashed secret must be sha256: and 64 hex digits'],
    [`a:read:short-secret`, 'entry 1: the secret must be at least 16 visible ASCII characters, no spaces'],
    // A bare key holds every scope: the same minimum (it was taken at any length, `abc` included).
    ['abc', 'entry 1: the secret must be at least 16 visible ASCII characters, no spaces'],
    [`${READER},short-secret`, 'entry 2: the secret must be at least 16 visible ASCII characters, no spaces'],
    [
      `a:read:${READER} ${CASHIER}`,
      'entry 1: the secret must be at least 16 visible ASCII characters, no spaces',
    ],
    [`ok:read:${READER},bad name:read:${CASHIER}`, 'entry 2: the name must be 1..64 of A-Z a-z 0-9 . _ -'],
    [`${'n'.repeat(65)}:read:${READER}`, 'entry 1: the name must be 1..64 of A-Z a-z 0-9 . _ -'],
    [`:read:${READER}`, 'entry 1: the name must be 1..64 of A-Z a-z 0-9 . _ -'],
    [`only-one:${READER}`, 'entry 1: must be name:scopes:secret (or a bare key without colons)'],
    [' , ', 'lists no key'],
  ])('refuses %s at start-up with a message naming the entry', (value, message) => {
    const text = refusal(value);
    expect(text).toBe(`Invalid configuration:\n  - OPS_API_KEYS: ${message}`);
    for (const secret of [READER, CASHIER, hex(READER), 'short-secret', 'abc'])
      expect(text).not.toContain(secret);
  });

  it('lists every problem of every entry in one message', () => {
    expect(refusal(`a:read:${READER},a:nope:${CASHIER},c:money:sha256:12`)).toBe(
      'Invalid configuration:\n  - OPS_API_KEYS: entry 2: scopes must be a +-joined set of ' +
        'read, register, money, operate; entry 3: a hashed secret must be sha256: and 64 hex digits',
    );
  });

  it('reads the failed-authentication limit and window', () => {
    const base = REQUIRED_ENV;
    expect(loadConfig({ ...base, AUTH_FAILURE_LIMIT: '5', AUTH_FAILURE_WINDOW: '15m' }).auth).toMatchObject({
      authFailureLimit: 5,
      authFailureWindowMs: 900_000,
    });
    expect(() => loadConfig({ ...base, AUTH_FAILURE_LIMIT: '0' })).toThrow(/AUTH_FAILURE_LIMIT/);
    expect(() => loadConfig({ ...base, AUTH_FAILURE_WINDOW: '500' })).toThrow(
      'AUTH_FAILURE_WINDOW must be from 1s to 24h',
    );
    expect(() => loadConfig({ ...base, AUTH_FAILURE_WINDOW: 'soon' })).toThrow(/AUTH_FAILURE_WINDOW/);
  });

  it('warns once at start-up for bare keys only, naming them, never their secrets', () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const start = (OPS_API_KEYS: string) =>
        new PartnerAuthenticator(
          loadConfig({ SPORTAPI_WEBHOOK_SECRETS: SECRET, OPS_API_KEYS }).auth,
        ).onModuleInit();
      start(`reader:read:${READER},cashier:money:sha256:${hex(CASHIER)}`);
      expect(warn.mock.calls).toEqual([]);
      start(`old-bare-key-0001,reader:read:${READER},old-bare-key-0003`);
      expect(warn.mock.calls).toEqual([
        [
          'OPS_API_KEYS has 2 bare key(s) with every scope (read, register, money, operate), named key-1, key-3: ' +
            'give each key a name and only the scopes it needs, as name:scopes:secret (docs/api.md#keys-and-scopes)',
        ],
      ]);
    } finally {
      warn.mockRestore();
    }
  });
});
