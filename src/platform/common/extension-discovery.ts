import type { DiscoveryService } from '@nestjs/core';

/** An abstract class used as an extension point (e.g. a wallet connector, a settlement hook). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ExtensionPoint<T> = abstract new (...args: any[]) => T;

/**
 * Every provider instance of the application that extends `point`, each once, in the order the
 * modules were registered (the app's own modules first, then the extensions given to
 * `AppModule.forRoot`): how the receiver finds the wallet connectors, settlement hooks and event
 * publishers of any module, its own and the bookmaker's (docs/extending.md). Call it from
 * `onModuleInit` or later, when every provider is instantiated.
 */
export function discoverExtensions<T>(discovery: DiscoveryService, point: ExtensionPoint<T>): T[] {
  const found = new Set<T>();
  for (const wrapper of discovery.getProviders()) {
    const instance: unknown = wrapper.instance;
    if (instance instanceof point) found.add(instance as T);
  }
  return [...found];
}
