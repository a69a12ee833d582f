import { loadConfig } from '../../src/app.config.js';
import { REQUIRED_ENV } from '../support/secrets.js';

// Issue 39 (docs/production.md#pgbouncer): DATABASE_POOLED and DATABASE_DIRECT_URL.

const base = REQUIRED_ENV;

describe('DATABASE_POOLED and DATABASE_DIRECT_URL (start-up check of the configuration)', () => {
  it('not pooled, no direct URL by default', () => {
    expect(loadConfig(base).database).toMatchObject({ databasePooled: false, databaseDirectUrl: undefined });
  });

  it('pooled with a direct URL', () => {
    const c = loadConfig({
      ...base,
      DATABASE_URL: 'postgres://app@pgbouncer:6432/settlement',
      DATABASE_POOLED: '1',
      DATABASE_DIRECT_URL: 'postgres://app@postgres:5432/settlement',
    });
    expect(c.database).toMatchObject({
      databaseUrl: 'postgres://app@pgbouncer:6432/settlement',
      databasePooled: true,
      databaseDirectUrl: 'postgres://app@postgres:5432/settlement',
    });
  });

  it('pooled without a direct URL: refused, naming the variable and why', () => {
    expect(() =>
      loadConfig({ ...base, DATABASE_URL: 'postgres://app@pgbouncer:6432/settlement', DATABASE_POOLED: '1' }),
    ).toThrow(
      /DATABASE_DIRECT_URL.*required with DATABASE_POOLED=1: migrations, retention, scheduled reconciliation, the delivery rollup and bulk actions hold session advisory locks/,
    );
  });

  it('a direct URL that is no PostgreSQL URL: refused', () => {
    expect(() => loadConfig({ ...base, DATABASE_DIRECT_URL: 'http://postgres:5432/x' })).toThrow(
      /DATABASE_DIRECT_URL/,
    );
  });
});
