import { main } from '../../src/extensions.js';
import { extensions } from './extension.js';

// The bookmaker's entry point: the receiver with its extension (`npm run build`, then
// `WALLET_CONNECTOR=partner-table EVENT_PUBLISHERS=partner-table node dist/examples/partner-module/main.js`).
main({ extensions });
