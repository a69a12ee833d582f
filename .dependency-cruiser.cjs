// The receiver's layers (docs/architecture.md, "Layers"), lowest first: a module may import its
// own layer and those below, never one above. `npm run lint` runs this (depcruise) after ESLint;
// test/unit/layering.spec.ts proves a forbidden import fails it. The allowed exceptions are named
// in ALLOWED, each with its reason. The operator console (console/) imports nothing of src/.
const LAYERS = [
  // src/platform: what every feature stands on
  ['common', 'src/platform/common/'],
  ['config', 'src/platform/config/'],
  ['observability', 'src/platform/observability/'],
  ['database', 'src/platform/database/'],
  ['platform', 'src/platform/(http|auth|operator-actions|retention-horizons)/'],
  ['deliveries', 'src/platform/deliveries/'],
  ['background', 'src/platform/background/'],
  ['health', 'src/platform/health/'],
  // src/core: the settlement core (CONTRACT §5-§8)
  ['ledger', 'src/core/ledger/'],
  ['settlement rules', 'src/core/settlement-rules/'],
  ['coupons', 'src/core/coupons/'],
  ['settlement', 'src/core/settlement/'],
  // src/outbound: what leaves after commit
  ['outbox', 'src/outbound/outbox/'],
  ['destinations', 'src/outbound/(wallet|events)/'],
  // src/intake: what comes in (SportAPI's callback and coupon reads)
  ['inbox', 'src/intake/inbox/'],
  ['quarantine', 'src/intake/quarantine/'],
  ['reconciliation', 'src/intake/reconciliation/'],
  ['callbacks', 'src/intake/callbacks/'],
  // src/operations: the operators' and the partner's tools
  ['edges', 'src/operations/(audit|console|bulk-actions|retention)/'],
  ['app', 'src/[^/]+[.]ts$'],
];

/** Imports that run up on purpose. */
const ALLOWED = [
  // The schema's table list: TypeORM and its CLI need every entity, whatever module owns it.
  { from: '^src/platform/database/entities[.]ts$', to: '^src/.+/entities/' },
];

const above = (i) => LAYERS.slice(i + 1).map(([, path]) => `^${path}`);

module.exports = {
  forbidden: [
    ...LAYERS.slice(0, -1).map(([name, path], i) => ({
      name: `layer-${name.replace(/ /g, '-')}`,
      comment: `${name} may import only its own layer and those below it (docs/architecture.md, "Layers")`,
      severity: 'error',
      from: { path: `^${path}`, pathNot: ALLOWED.map((a) => a.from) },
      to: { path: above(i) },
    })),
    ...ALLOWED.map((a, i) => ({
      name: `allowed-${i}-stays-narrow`,
      comment: 'an allowed upward import reaches only what it is allowed for',
      severity: 'error',
      from: { path: a.from },
      to: { path: LAYERS.map(([, path]) => `^${path}`), pathNot: [a.to, '^src/platform/database/'] },
    })),
    {
      name: 'examples-use-the-extension-api',
      comment: "a bookmaker's module (examples/) imports the receiver only through src/extensions.ts (docs/extending.md)",
      severity: 'error',
      from: { path: '^examples/' },
      to: { path: '^src/', pathNot: '^src/extensions[.]ts$' },
    },
    {
      name: 'console-is-a-client',
      comment:
        'the operator console knows the receiver only through its API: types and enums from openapi.json (console/src/api.gen.ts), never src/ (docs/console.md)',
      severity: 'error',
      from: { path: '^console/' },
      to: { path: '^src/' },
    },
    {
      name: 'no-circular-modules',
      comment: 'no cycle between files',
      severity: 'warn',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
// For test/unit/layering.spec.ts and the up-import count (not read by depcruise).
Object.defineProperty(module.exports, 'layers', { value: { LAYERS, ALLOWED }, enumerable: false });
