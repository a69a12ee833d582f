import { Module } from '@nestjs/common';
import type { MigrationInterface } from 'typeorm';
import { partnerExtension } from '../../examples/partner-module/extension.js';
import { checkBuiltInNames, loadConfig } from '../../src/app.config.js';
import { extensionSchema } from '../../src/platform/database/extension-schema.js';
import { configFragment, defineExtension, Joi } from '../../src/extensions.js';
import { describeExtensions } from '../../src/extension.js';
import { REQUIRED_ENV } from '../support/secrets.js';

// Issue 43: an extension entry brings its migrations (named `<extension>.<ClassName>`, checked at
// start), its settings (validated with ours, named the same way, listed in the start line with
// secrets masked) and the names it provides (checked before the database starts).

@Module({})
class EmptyModule {}

const migration = (name: string) => {
  const m = class implements MigrationInterface {
    async up(): Promise<void> {}
    async down(): Promise<void> {}
  };
  Object.defineProperty(m, 'name', { value: name });
  return m;
};

const failure = (work: () => unknown): string | undefined => {
  try {
    work();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
};

describe('extensionSchema (the extensions migrations, with ours)', () => {
  it("records each migration as <extension>.<ClassName>, TypeORM's instance name included", () => {
    const schema = extensionSchema([
      { name: 'acme-bonus', migrations: [migration('BonusTables1796700000001')] },
    ]);
    expect(schema.migrations.map((m) => m.name)).toEqual(['acme-bonus.BonusTables1796700000001']);
    expect((new schema.migrations[0]() as { name?: string }).name).toBe(
      'acme-bonus.BonusTables1796700000001',
    );
  });

  it('refuses a bad or repeated name, a name without timestamp and a timestamp already used', () => {
    expect(
      failure(() =>
        extensionSchema(
          [
            { name: 'Acme', migrations: [] },
            { name: 'acme', migrations: [migration('NoStamp'), migration('Ours1764490000000')] },
            { name: 'acme' },
          ],
          [migration('InitialSchema1764490000000')],
        ),
      ),
    ).toBe(
      'Invalid extensions:\n' +
        "  - extension 'Acme': a name is lower-case letters, digits and '-' (e.g. acme-bonus)\n" +
        "  - extension 'acme': migration NoStamp must end with a 13-digit timestamp (e.g. LoyaltyTables1796700000000)\n" +
        "  - extension 'acme': migration Ours1764490000000 has the timestamp of InitialSchema1764490000000\n" +
        "  - extension 'acme': given twice",
    );
  });
});

describe('loadConfig with extension entries (their settings)', () => {
  const acme = defineExtension({
    name: 'acme-bonus',
    module: EmptyModule,
    config: configFragment('acme-bonus', {
      schema: {
        ACME_BONUS_RATE: Joi.number().min(0).max(1).default(0.1),
        ACME_BONUS_API_KEY: Joi.string().min(8),
        ACME_BONUS_PASSPHRASE: Joi.string(),
      },
      build: (v) => ({ rate: v.ACME_BONUS_RATE as number }),
    }),
    secrets: ['ACME_BONUS_PASSPHRASE'],
  });

  it("keeps the extension's slice under its name and lists its settings, secrets masked", () => {
    const config = loadConfig(
      { ...REQUIRED_ENV, ACME_BONUS_API_KEY: 'k3y-0123456789', ACME_BONUS_PASSPHRASE: 'open sesame' },
      [acme],
    );
    expect(config.extensions.slices['acme-bonus']).toEqual({ rate: 0.1 });
    expect(describeExtensions(config.extensions.settings)).toBe(
      'extensions: acme-bonus (ACME_BONUS_RATE=0.1, ACME_BONUS_API_KEY=***, ACME_BONUS_PASSPHRASE=***)',
    );
  });

  it('a bad setting stops the start with its name, as ours do, with ours', () => {
    expect(failure(() => loadConfig({ ...REQUIRED_ENV, ACME_BONUS_RATE: '3', PORT: 'x' }, [acme]))).toBe(
      'Invalid configuration:\n  - PORT: "PORT" must be a number\n  - ACME_BONUS_RATE: "ACME_BONUS_RATE" must be less than or equal to 1',
    );
    expect(
      failure(() => loadConfig({ ...REQUIRED_ENV, PARTNER_POINTS_PER_UNIT: '0' }, [partnerExtension])),
    ).toBe(
      'Invalid configuration:\n  - PARTNER_POINTS_PER_UNIT: "PARTNER_POINTS_PER_UNIT" must be greater than or equal to 1',
    );
  });

  it("refuses a variable not named after the extension, or one of the receiver's", () => {
    const bad = defineExtension({
      name: 'acme',
      module: EmptyModule,
      config: configFragment('acme', {
        schema: { BONUS_RATE: Joi.number(), ACME_X: Joi.string() },
        build: () => ({}),
      }),
    });
    const ours = defineExtension({
      name: 'wallet',
      module: EmptyModule,
      config: configFragment('wallet', { schema: { WALLET_URL: Joi.string() }, build: () => ({}) }),
    });
    expect(failure(() => loadConfig(REQUIRED_ENV, [bad, ours]))).toBe(
      "Invalid extensions:\n  - extension 'acme': BONUS_RATE must be named ACME_…\n  - extension 'wallet': WALLET_URL is a variable of the receiver",
    );
  });
});

describe('checkBuiltInNames with extension entries (before the database)', () => {
  const refusal = (env: Record<string, string>, entries: Parameters<typeof checkBuiltInNames>[1]) =>
    failure(() =>
      checkBuiltInNames(
        loadConfig({ ...REQUIRED_ENV, ...env }, entries === true ? [] : (entries as never)),
        entries,
      ),
    );

  it('knows the built-in names and those the entries declare', () => {
    expect(
      refusal({ WALLET_CONNECTOR: 'partner-table', EVENT_PUBLISHERS: 'nats,partner-table' }, [
        partnerExtension,
      ]),
    ).toBe(undefined);
    expect(refusal({ WALLET_CONNECTOR: 'nope' }, [partnerExtension])).toBe(
      "Invalid configuration:\n  - WALLET_CONNECTOR: no connector 'nope' (known: http, partner-table, none)",
    );
    expect(refusal({ EVENT_PUBLISHERS: 'partner-table,kafka' }, [partnerExtension])).toBe(
      "Invalid configuration:\n  - EVENT_PUBLISHERS: no publisher 'kafka' (known: rabbitmq, nats, partner-table)",
    );
  });

  it('checks RETENTION_ARCHIVE_CONNECTOR when a class is archived, with the declared archive connectors', () => {
    const archiving = defineExtension({
      name: 'vault',
      module: EmptyModule,
      archiveConnectors: ['vault-s3'],
    });
    const env = { RETENTION_ARCHIVE: 'raw_bodies', RETENTION_ARCHIVE_DIR: '/tmp/archive' };
    expect(refusal({ ...env, RETENTION_ARCHIVE_CONNECTOR: 'vault-s3' }, [archiving])).toBe(undefined);
    expect(refusal({ ...env, RETENTION_ARCHIVE_CONNECTOR: 'vault-s4' }, [archiving])).toBe(
      "Invalid configuration:\n  - RETENTION_ARCHIVE_CONNECTOR: no connector 'vault-s4' (known: directory, vault-s3)",
    );
    expect(refusal({ RETENTION_ARCHIVE_CONNECTOR: 'vault-s4' }, [archiving])).toBe(undefined);
  });

  it('leaves the names to start-up when a bare module is among the extensions (it declares none)', () => {
    expect(refusal({ WALLET_CONNECTOR: 'nope' }, [partnerExtension, EmptyModule])).toBe(undefined);
  });
});
