// NestJS 12 ships only ES modules, so the tests run in Jest's native ESM mode
// (`node --experimental-vm-modules`, see the npm scripts) with ts-jest emitting ESM.
const esm = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json' }] },
  moduleFileExtensions: ['ts', 'js', 'json'],
};
/** 30 s per test and hook (test/support/test-timeout.ts) for suites that boot apps. */
const slow = { setupFilesAfterEnv: ['<rootDir>/test/support/test-timeout.ts'] };

export default {
  ...esm,
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  projects: [
    { ...esm, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.spec.ts'] },
    // An e2e or reliability test boots apps and talks to PostgreSQL: seconds on a loaded 2-core
    // machine, so Jest's 5 s default would fail correct tests there; a hang still fails in 30 s.
    { ...esm, ...slow, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.spec.ts'] },
    // Races, crashes, outages, property-based sequences, hostile input: spawns built receivers
    // (`npm run test:reliability` builds first), so it is not part of `npm test`.
    { ...esm, ...slow, displayName: 'reliability', testMatch: ['<rootDir>/test/reliability/**/*.spec.ts'] },
    // Pages in Debian's chromium through playwright-core (`npm run test:browser`, not part of
    // `npm test`); its global set-up stops the run with one line when chromium is missing.
    {
      ...esm,
      ...slow,
      displayName: 'browser',
      testMatch: ['<rootDir>/test/browser/**/*.spec.ts'],
      globalSetup: '<rootDir>/test/browser/support/global-setup.ts',
    },
  ],
};
