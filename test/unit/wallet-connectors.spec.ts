import { checkBuiltInNames, loadConfig } from '../../src/app.config.js';
import { describeWalletConnector } from '../../src/outbound/wallet/wallet-connectors.js';
import { REQUIRED_ENV } from '../support/secrets.js';

// Issue 29, item 8: the start line names the wallet connector in force, and never a secret.

const base = REQUIRED_ENV;
const SECRET = 'wallet-secret-0123456789';
const described = (env: Record<string, string>) =>
  describeWalletConnector(loadConfig({ ...base, ...env }).wallet);

describe('describeWalletConnector (the start line)', () => {
  it('none without WALLET_URL, or with WALLET_CONNECTOR=none', () => {
    expect(described({})).toBe('wallet connector: none');
    expect(described({ WALLET_CONNECTOR: 'none', WALLET_URL: 'http://127.0.0.1:3918' })).toBe(
      'wallet connector: none',
    );
  });

  it('http with its URL: origin and path, never credentials, query, fragment or WALLET_SECRET', () => {
    expect(described({ WALLET_URL: 'http://127.0.0.1:3918', WALLET_SECRET: SECRET })).toBe(
      'wallet connector: http → http://127.0.0.1:3918',
    );
    const line = described({
      WALLET_URL: 'https://ops:hunter2-password@wallet.example:8443/api/v1/?token=t0ps3cret#x',
      WALLET_SECRET: SECRET,
    });
    expect(line).toBe('wallet connector: http → https://wallet.example:8443/api/v1');
  });

  it('a connector module by its name', () => {
    expect(described({ WALLET_CONNECTOR: 'partner-table' })).toBe('wallet connector: partner-table');
  });
});

// New-user report 2, finding 6: without extension modules only the built-in names exist, so a
// typo is refused before any database is created (startReceiver calls this right after loadConfig).
describe('checkBuiltInNames (before the database)', () => {
  const refusal = (env: Record<string, string>, withExtensions = false): string | undefined => {
    try {
      checkBuiltInNames(loadConfig({ ...base, ...env }), withExtensions);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('refuses an unknown WALLET_CONNECTOR or EVENT_PUBLISHERS name, listing the built-in ones', () => {
    expect(refusal({ WALLET_CONNECTOR: 'nope' })).toBe(
      "Invalid configuration:\n  - WALLET_CONNECTOR: no connector 'nope' (known: http, none)",
    );
    expect(refusal({ EVENT_PUBLISHERS: 'kafka,nats,pulsar' })).toBe(
      "Invalid configuration:\n  - EVENT_PUBLISHERS: no publisher 'kafka', 'pulsar' (known: rabbitmq, nats)",
    );
  });

  it('lets the built-in names through, and leaves every name to start-up when extensions are given', () => {
    expect(
      refusal({
        WALLET_URL: 'http://127.0.0.1:3918',
        WALLET_SECRET: SECRET,
        EVENT_PUBLISHERS: 'rabbitmq,nats',
      }),
    ).toBeUndefined();
    expect(refusal({ WALLET_CONNECTOR: 'none' })).toBeUndefined();
    expect(
      refusal({ WALLET_CONNECTOR: 'partner-table', EVENT_PUBLISHERS: 'partner-table' }, true),
    ).toBeUndefined();
  });
});
