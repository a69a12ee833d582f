import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import ts from 'typescript';
import { partnerExtension } from '../../examples/partner-module/extension.js';
import { LoyaltyPointsHook } from '../../examples/partner-module/loyalty-points.hook.js';
import { PARTNER_CONFIG } from '../../examples/partner-module/partner.config.js';
import type { PartnerConfig } from '../../examples/partner-module/partner.config.js';
import { CONFIG_FRAGMENTS, configSlices, loadConfig } from '../../src/app.config.js';
import { AppConfigModule } from '../../src/platform/config/app-config.module.js';
import { MONEY_CONFIG } from '../../src/core/ledger/money.config.js';
import type { MoneyConfig } from '../../src/core/ledger/money.config.js';
import { WALLET_CONFIG } from '../../src/outbound/wallet/wallet.config.js';
import type { WalletConfig } from '../../src/outbound/wallet/wallet.config.js';
import { REQUIRED_ENV } from '../support/secrets.js';

// Issue 43, "configuration by slice": each feature owns its slice (type, fragment, token); a
// class injects only the slices it uses, never the whole configuration; the whole configuration's
// type and value hold exactly the slices of the fragments the app lists, and an extension's
// fragment gets a token of its own.

const ROOT = process.cwd();

/** Files under `dir` (relative to the repository) ending with `.ts`. */
function sources(dir: string): string[] {
  return readdirSync(resolve(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(resolve(ROOT, path)).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** The name of a parameter's owner when Nest fills it: a class constructor or a provider's `useFactory`. */
function injectedInto(parameter: ts.ParameterDeclaration): string | undefined {
  const owner = parameter.parent;
  if (ts.isConstructorDeclaration(owner)) return `${owner.parent.name?.text ?? 'a class'} constructor`;
  const property = owner.parent;
  if (
    (ts.isArrowFunction(owner) || ts.isFunctionExpression(owner)) &&
    ts.isPropertyAssignment(property) &&
    property.name.getText() === 'useFactory'
  )
    return 'a useFactory';
  if (ts.isMethodDeclaration(owner) && owner.name.getText() === 'useFactory') return 'a useFactory';
  return undefined;
}

/**
 * Where `text` (a TypeScript file) has Nest inject the whole configuration: a constructor or
 * `useFactory` parameter typed with `AppConfig`, or any use of the former whole-configuration
 * token `APP_CONFIG`. Each as `file:line: what`.
 */
function wholeConfigInjections(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2023, true);
  const found: string[] = [];
  const at = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && node.text === 'APP_CONFIG') found.push(`${at(node)}: APP_CONFIG`);
    if (ts.isParameter(node) && node.type) {
      const into = injectedInto(node);
      const mentions = (type: ts.Node): boolean =>
        (ts.isTypeReferenceNode(type) && type.typeName.getText() === 'AppConfig') ||
        ts.forEachChild(type, (child) => mentions(child) || undefined) === true;
      if (into && mentions(node.type)) found.push(`${at(node)}: ${into} takes the whole configuration`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('configuration by slice', () => {
  const config = loadConfig({ ...REQUIRED_ENV, PARTNER_POINTS_PER_UNIT: '2' }, [partnerExtension]);

  it('holds the slice of each listed fragment under its key, and nothing else', () => {
    const keys = CONFIG_FRAGMENTS.map((f) => f.key);
    expect(Object.keys(config).sort()).toEqual([...keys, 'extensions'].sort());
    expect(new Set(keys).size).toBe(keys.length);
    expect(new Set(CONFIG_FRAGMENTS.map((f) => f.token)).size).toBe(CONFIG_FRAGMENTS.length);
    expect(config.extensions.slices).toEqual({ partner: { pointsPerUnit: 2 } });
    expect(loadConfig(REQUIRED_ENV).extensions).toEqual({ settings: [], slices: {} });
  });

  it('provides each slice under its token: a provider gets its slices, an extension its own', async () => {
    @Injectable()
    class Probe {
      constructor(
        @Inject(WALLET_CONFIG) readonly wallet: WalletConfig,
        @Inject(MONEY_CONFIG) readonly money: MoneyConfig,
        @Inject(PARTNER_CONFIG) readonly partner: PartnerConfig,
      ) {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [AppConfigModule.forRoot(configSlices(config, [partnerExtension]))],
      providers: [Probe],
    }).compile();
    const probe = moduleRef.get(Probe);
    expect(probe.wallet).toBe(config.wallet);
    expect(probe.money).toBe(config.money);
    expect(probe.partner).toEqual({ pointsPerUnit: 2 });
    for (const f of CONFIG_FRAGMENTS) expect(moduleRef.get(f.token)).toBe(config[f.key]);
    expect(configSlices(config, [partnerExtension]).map((s) => s.value)).not.toContain(config);
    await moduleRef.close();
  });

  it("refuses an extension's provider whose slice was not loaded (its module given bare), naming the slice", async () => {
    const compiling = Test.createTestingModule({
      imports: [AppConfigModule.forRoot(configSlices(loadConfig(REQUIRED_ENV), [partnerExtension.module]))],
      providers: [LoyaltyPointsHook],
    }).compile();
    await expect(compiling).rejects.toThrow(
      /^Nest can't resolve dependencies of the LoyaltyPointsHook \(\?\)\. Please make sure that the argument Symbol\(partner configuration\) at index \[0\]/,
    );
  });

  it('the check below finds a class or a factory that injects the whole configuration', () => {
    const probe = [
      "import type { AppConfig } from '../app.config.js';",
      'export class A { constructor(@Inject(APP_CONFIG) private readonly c: AppConfig) {} }',
      'export class B { constructor(private readonly c: Pick<AppConfig, "wallet">) {} }',
      'export const p = { provide: X, inject: [Y], useFactory: (c: AppConfig) => c.wallet };',
      'export function fine(config: AppConfig): void {}',
      'export class C { constructor(@Inject(WALLET_CONFIG) readonly w: WalletConfig) {} }',
    ].join('\n');
    expect(wholeConfigInjections('src/probe.ts', probe)).toEqual([
      'src/probe.ts:2: A constructor takes the whole configuration',
      'src/probe.ts:2: APP_CONFIG',
      'src/probe.ts:3: B constructor takes the whole configuration',
      'src/probe.ts:4: a useFactory takes the whole configuration',
    ]);
  });

  it('no file under src/ (nor the example extension) injects the whole configuration', () => {
    const files = [...sources('src'), ...sources('examples')];
    expect(files.length).toBeGreaterThan(100);
    expect(
      files.flatMap((file) => wholeConfigInjections(file, readFileSync(resolve(ROOT, file), 'utf8'))),
    ).toEqual([]);
  });
});
