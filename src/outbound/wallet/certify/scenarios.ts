import type { Scenario } from './scenario-checks.js';
import { MONEY_SCENARIOS } from './scenarios-money.js';
import { INPUT_SCENARIOS } from './scenarios-input.js';
import { SIGNATURE_SCENARIOS } from './scenarios-signature.js';
import { BATCH_SCENARIOS } from './scenarios-batch.js';
import { OPERATIONS_SCENARIOS } from './scenarios-operations.js';

export { LATENCY_FAIL, LATENCY_WARN } from './scenario-checks.js';
export type { Scenario } from './scenario-checks.js';

/**
 * The scenarios of `npm run wallet:certify` (docs/wallet.md, "Certifying a wallet"), in the order
 * they run and are reported: each a rule of docs/wallet-http-contract.md checked against the
 * wallet, one file per group.
 */
export const SCENARIOS: Scenario[] = [
  ...MONEY_SCENARIOS,
  ...INPUT_SCENARIOS,
  ...SIGNATURE_SCENARIOS,
  ...BATCH_SCENARIOS,
  ...OPERATIONS_SCENARIOS,
];
