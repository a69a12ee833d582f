import { defineExtension } from '../../src/extensions.js';
import { partnerConfig } from './partner.config.js';
import { PartnerModule } from './partner.module.js';
import { partnerSchema } from './schema.js';

/**
 * The example partner's extension entry (docs/extending.md): its module, its migrations (recorded
 * as `partner.<ClassName>`) and entities, its settings (`PARTNER_…`) and the names of the
 * connector and publisher it provides (checked before the database starts). Given to
 * `main({ extensions })` (main.ts) or `AppModule.forRoot`. The command-line tools read its schema
 * part alone (schema.ts, named by `RECEIVER_EXTENSIONS`).
 */
export const partnerExtension = defineExtension({
  ...partnerSchema,
  module: PartnerModule,
  config: partnerConfig,
  walletConnectors: ['partner-table'],
  eventPublishers: ['partner-table'],
});

/** The entries given to `main` (main.ts). */
export const extensions = [partnerExtension];
