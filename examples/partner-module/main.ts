import { main } from '../../src/extensions.js';
import { PartnerModule } from './partner.module.js';

// The bookmaker's entry point: the receiver with its module (`npm run build`, then
// `WALLET_CONNECTOR=partner-table EVENT_PUBLISHERS=partner-table node dist/examples/partner-module/main.js`).
main({ extensions: [PartnerModule] });
