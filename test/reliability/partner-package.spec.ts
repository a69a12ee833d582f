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

const MODULE = `import { appendFileSync } from 'node:fs';
import { Injectable, Module } from '@nestjs/common';
import { EventPublisher, SettlementHook, WalletConnector } from 'sportapi-settlement-receiver/extensions';
import type {
  CouponTransition,
  OutboxDelivery,
  PublishRequest,
  WalletDelivery,
  WalletDeliveryRequest,
} from 'sportapi-settlement-receiver/extensions';

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
  onTransition(t: CouponTransition): void {
    note('hook ' + t.couponCode + ' ' + t.transition + ' posted=' + t.posted);
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

const MAIN = `import { main } from 'sportapi-settlement-receiver/extensions';
import { AcmeModule } from './acme.module.js';

main({ extensions: [AcmeModule] });
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
    writeFileSync(join(dir, 'src/acme.module.ts'), MODULE);
    writeFileSync(join(dir, 'src/main.ts'), MAIN);
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

    const log = join(dir, 'acme.log');
    receiver = await startReceiver(
      PORT,
      db.url,
      {
        WALLET_CONNECTOR: 'acme-wallet',
        EVENT_PUBLISHERS: 'acme-pub',
        ACME_LOG: log,
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
    expect(started).toContain('; wallet connector: acme-wallet"');

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
  }, 180_000);
});
