import { DynamicModule, Global, Module } from '@nestjs/common';

/**
 * Provides each slice of the validated configuration under its own token to every module (a
 * fragment's `token`: `WALLET_CONFIG` → the wallet's slice), built once at start-up by
 * `loadConfig`. The whole configuration has no token: a class injects the slices it uses.
 */
@Global()
@Module({})
export class AppConfigModule {
  static forRoot(slices: readonly { token: symbol; value: object }[]): DynamicModule {
    const providers = slices.map((s) => ({ provide: s.token, useValue: s.value }));
    return { module: AppConfigModule, providers, exports: providers.map((p) => p.provide) };
  }
}
