import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { batchOf } from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import {
  fundCoupons,
  portRange,
  post,
  startReceiver,
  stopReceiver,
  suiteDatabase,
} from './support/receiver.js';
import type { Receiver, SuiteDatabase } from './support/receiver.js';

// New-user report 2, finding 2 (docs/extending.md, "Your own module, outside this repository"):
// a bookmaker's package in a folder of its own depends on this checkout (`file:`) and on the
// receiver's own @nestjs/common, imports `sportapi-settlement-receiver/extensions` (the package's
// `exports`, with its types), compiles with tsc and starts the receiver with its module: its
// connector, hook and publisher are found and used. Nothing of it lives under src/ or examples/.
// Issue 43: its extension entry brings a migration (run at start with ours, recorded as
// `acme.…`; `npm run migration:run` of the checkout reads it with RECEIVER_EXTENSIONS), an entity
// and settings (validated at start: a bad one stops it naming the variable; listed in the start
// line, the token masked), and declares its names (a typo stops the start before the database).
// Its hook injects its own slice of the configuration by its fragment's token, never the whole.

const ROOT = process.cwd();
const [PORT] = portRange(98, 1);

/** The partner's package.json: the receiver and its @nestjs/common, linked as npm links a `file:` folder. */
const PACKAGE = {
  name: 'acme-receiver-extensions',
  private: true,
  type: 'module',
  dependencies: {
    'sportapi-settlement-receiver': `file:${ROOT}`,
    '@nestjs/common': `file:${ROOT}/node_modules/@nestjs/common`,
    typeorm: `file:${ROOT}/node_modules/typeorm`,
  },
  devDependencies: {
    '@types/node': `file:${ROOT}/node_modules/@types/node`,
  },
};

/**
 * The partner's tsconfig.json: the one docs/extending.md shows in "Your own module, outside this
 * repository" (step 4), so the page's file is the one compiled and started here.
 */
function documentedTsconfig(page = readFileSync(join(ROOT, 'docs/extending.md'), 'utf8')): string {
  const section = page.slice(page.indexOf('## Your own module, outside this repository'));
  // Its json blocks: the package.json of step 2, the tsconfig.json of step 4.
  const block = [...section.matchAll(/```json\n([\s\S]*?)```/g)].find((b) =>
    b[1].includes('"compilerOptions"'),
  );
  if (!block) throw new Error('docs/extending.md shows no tsconfig.json for an outside package');
  return block[1].replace(/^ {3}/gm, '');
}

/** Its settings: a configuration fragment, whose slice its hook injects by the fragment's token. */
const CONFIG = `import { configFragment, Joi } from 'sportapi-settlement-receiver/extensions';

export interface AcmeConfig {
  bonusPoints: number;
}

export const acmeConfig = configFragment('acme', {
  schema: {
    ACME_BONUS_POINTS: Joi.number().integer().min(1).default(1),
    ACME_API_TOKEN: Joi.string().min(8).required(),
  },
  build: (v): AcmeConfig => ({ bonusPoints: v.ACME_BONUS_POINTS as number }),
});

export const ACME_CONFIG = acmeConfig.token;
`;

const MODULE = `import { appendFileSync } from 'node:fs';
import { Inject, Injectable, Module } from '@nestjs/common';
import { EventPublisher, SettlementHook, WalletConnector } from 'sportapi-settlement-receiver/extensions';
import type {
  CouponTransition,
  SettlementHookContext,
  OutboxDelivery,
  PublishRequest,
  WalletDelivery,
  WalletDeliveryRequest,
} from 'sportapi-settlement-receiver/extensions';
import { ACME_CONFIG } from './config.js';
import type { AcmeConfig } from './config.js';

const note = (line: string) => appendFileSync(process.env.ACME_LOG ?? 'acme.log', line + '\\n');

@Injectable()
export class AcmeWallet extends WalletConnector {
  readonly name = 'acme-wallet';
  async deliver({ transaction }: WalletDeliveryRequest): Promise<WalletDelivery> {
    note('wallet ' + transaction.transactionId + ' ' + transaction.direction + ' ' + transaction.amount);
    return { outcome: 'delivered' };
  }
}

@Injectable()
export class AcmeHook extends SettlementHook {
  readonly name = 'acme-hook';
  constructor(@Inject(ACME_CONFIG) private readonly config: AcmeConfig) {
    super();
  }
  async onTransition(t: CouponTransition, context: SettlementHookContext): Promise<void> {
    note('hook ' + t.couponCode + ' ' + t.transition + ' posted=' + t.posted);
    const { rows } = await context.tx.query<{ n: number }>('SELECT count(*)::int AS n FROM acme.bonus');
    context.write({
      text: 'INSERT INTO acme.bonus (coupon_code, points, seen) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
      values: [t.couponCode, this.config.bonusPoints, rows[0].n],
    });
  }
}

@Injectable()
export class AcmePublisher extends EventPublisher {
  readonly name = 'acme-pub';
  async publish({ events }: PublishRequest): Promise<OutboxDelivery[]> {
    return events.map((e) => {
      note('event ' + e.event.eventId);
      return { outcome: 'delivered' };
    });
  }
}

@Module({ providers: [{ provide: WalletConnector, useClass: AcmeWallet }, AcmeHook, AcmePublisher] })
export class AcmeModule {}
`;

/** Its schema: a migration and an entity, importing TypeORM only (what RECEIVER_EXTENSIONS loads). */
const SCHEMA = `import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { MigrationInterface, QueryRunner } from 'typeorm';

export class AcmeBonus1796800000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.query('CREATE SCHEMA acme; CREATE TABLE acme.bonus (coupon_code text PRIMARY KEY, points int NOT NULL, seen int NOT NULL)');
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP SCHEMA acme CASCADE');
  }
}

@Entity({ schema: 'acme', name: 'bonus' })
export class AcmeBonus {
  @PrimaryColumn('text', { name: 'coupon_code', primaryKeyConstraintName: 'bonus_pkey' }) couponCode!: string;
  @Column('int') points!: number;
  @Column('int') seen!: number;
}

export const acmeSchema = { name: 'acme', migrations: [AcmeBonus1796800000000], entities: [AcmeBonus] };
export const extensions = [acmeSchema];
`;

const MAIN = `import { defineExtension, main } from 'sportapi-settlement-receiver/extensions';
import { AcmeModule } from './acme.module.js';
import { acmeConfig } from './config.js';
import { acmeSchema } from './schema.js';

main({
  extensions: [
    defineExtension({
      ...acmeSchema,
      module: AcmeModule,
      config: acmeConfig,
      walletConnectors: ['acme-wallet'],
      eventPublishers: ['acme-pub'],
    }),
  ],
});
`;

describe("a bookmaker's module in its own package, outside this repository", () => {
  let dir: string;
  let db: SuiteDatabase;
  let receiver: Receiver | undefined;
  beforeAll(async () => {
    db = await suiteDatabase(2);
    dir = mkdtempSync(join(tmpdir(), 'acme-extensions-'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify(PACKAGE, null, 2));
    writeFileSync(join(dir, 'tsconfig.json'), documentedTsconfig());
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src/config.ts'), CONFIG);
    writeFileSync(join(dir, 'src/acme.module.ts'), MODULE);
    writeFileSync(join(dir, 'src/main.ts'), MAIN);
    writeFileSync(join(dir, 'src/schema.ts'), SCHEMA);
  }, 60_000);
  afterAll(async () => {
    await stopReceiver(receiver);
    await db?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('installs with npm, compiles with tsc against the exported types, and its extensions settle a coupon', async () => {
    // npm links the folders (outside the package, it installs nothing into them): no registry.
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: dir,
      stdio: 'pipe',
      env: { ...process.env, npm_config_update_notifier: 'false' },
    });
    expect(realpathSync(join(dir, 'node_modules/sportapi-settlement-receiver'))).toBe(realpathSync(ROOT));
    expect(realpathSync(join(dir, 'node_modules/@nestjs/common'))).toBe(
      realpathSync(join(ROOT, 'node_modules/@nestjs/common')),
    );
    // The exports entry: the extension API and its declarations, nothing else of the package.
    const resolved = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "process.stdout.write(import.meta.resolve('sportapi-settlement-receiver/extensions'))",
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(resolved).toBe(`file://${realpathSync(ROOT)}/dist/src/extensions.js`);
    expect(existsSync(join(ROOT, 'dist/src/extensions.d.ts'))).toBe(true);

    // `tsc -p .` with the page's tsconfig.json: TypeScript 6 compiles it (no TS5011) into dist/main.js.
    const tsc = spawnSync(process.execPath, [resolve(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect({ status: tsc.status, output: tsc.stdout + tsc.stderr }).toEqual({ status: 0, output: '' });
    expect(existsSync(join(dir, 'dist/main.js'))).toBe(true);

    // A bad setting of the extension, or an unknown connector name: the start stops at once,
    // before any database (none is given here), naming the variable.
    const refused = (env: Record<string, string>) => {
      const run = spawnSync(process.execPath, ['dist/main.js'], {
        cwd: dir,
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          PORT: String(PORT),
          HOST: '127.0.0.1',
          DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
          SPORTAPI_WEBHOOK_SECRETS: 'acme-secret-0123456789',
          OPS_API_KEYS: 'acme-ops-key-0123456789',
          ...env,
        },
      });
      return { status: run.status, stderr: run.stderr.trim() };
    };
    expect(refused({ ACME_API_TOKEN: 'acme-token-1', ACME_BONUS_POINTS: 'many' })).toEqual({
      status: 1,
      stderr: 'Invalid configuration:\n  - ACME_BONUS_POINTS: "ACME_BONUS_POINTS" must be a number',
    });
    expect(refused({ ACME_API_TOKEN: 'acme-token-1', WALLET_CONNECTOR: 'acme-walet' })).toEqual({
      status: 1,
      stderr:
        "Invalid configuration:\n  - WALLET_CONNECTOR: no connector 'acme-walet' (known: http, acme-wallet, none)",
    });

    const log = join(dir, 'acme.log');
    receiver = await startReceiver(
      PORT,
      db.url,
      {
        WALLET_CONNECTOR: 'acme-wallet',
        EVENT_PUBLISHERS: 'acme-pub',
        ACME_LOG: log,
        ACME_BONUS_POINTS: '3',
        ACME_API_TOKEN: 'acme-token-secret-1',
        WALLET_POLL_INTERVAL_MS: '50',
        EVENT_POLL_INTERVAL_MS: '50',
      },
      30_000,
      dir,
      'dist/main.js',
    );
    const started = receiver.output();
    expect(started).toContain('settlement hooks: acme-hook');
    expect(started).toContain('wallet connector acme-wallet');
    expect(started).toContain(
      '; wallet connector: acme-wallet; extensions: acme (ACME_BONUS_POINTS=3, ACME_API_TOKEN=***)"',
    );
    expect(started).not.toContain('acme-token-secret-1');

    await fundCoupons(
      receiver.url,
      { id: 'acme-1', amount: '50.00', key: 'acme-dep-1', reason: 'test' },
      ['ACME1'],
      '10.00',
    );
    const settled = await post(
      receiver.url,
      batchOf('acme-b1', { code: 'ACME1', status: 2, realWin: '12.50' }),
    );
    expect({ status: settled.status, body: settled.body }).toEqual({
      status: 200,
      body: { success: true, processed: 1 },
    });
    const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').sort() : []);
    await eventually(async () => lines().length === 4, 'the hook, the wallet credit and both events');
    expect(lines()).toEqual([
      'event ACME1:0:final_credit',
      'event ACME1:0:stake_debit',
      'hook ACME1 settled posted=true',
      'wallet ACME1:0:final_credit credit 12.50',
    ]);
    // Its migration ran with ours at start, recorded under its name; its hook wrote its row.
    const { rows } = await db.pool.query<{ name: string }>(
      `SELECT name FROM schema_migrations WHERE name LIKE 'acme.%'`,
    );
    expect(rows).toEqual([{ name: 'acme.AcmeBonus1796800000000' }]);
    expect((await db.pool.query('SELECT coupon_code, points, seen FROM acme.bonus')).rows).toEqual([
      { coupon_code: 'ACME1', points: 3, seen: 0 },
    ]);
    // The checkout's migration:run and the TypeORM CLI learn of it from RECEIVER_EXTENSIONS.
    const cliEnv = { ...process.env, DATABASE_URL: db.url, RECEIVER_EXTENSIONS: join(dir, 'dist/schema.js') };
    const migrate = spawnSync('npm', ['run', '--silent', 'migration:run'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: cliEnv,
    });
    expect({ status: migrate.status, stderr: migrate.stderr.trim() }).toEqual({
      status: 0,
      stderr: 'no pending migrations',
    });
    const schemaLog = spawnSync('npm', ['run', '--silent', 'typeorm', '--', 'schema:log'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: cliEnv,
    });
    // TypeORM colours the line when it believes it has a colour terminal (CI=true does).
    expect(stripVTControlCharacters(schemaLog.stdout).trim()).toBe(
      'Your schema is up to date - there are no queries to be executed by schema synchronization.',
    );
  }, 240_000);
});
