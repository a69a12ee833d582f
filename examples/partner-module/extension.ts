import { defineExtension } from '../../src/extensions.js';
import { PARTNER_ENTITIES } from './entities.js';
import { PartnerTables1796700000000 } from './migrations/1796700000000-PartnerTables.js';
import { partnerConfig } from './partner.config.js';
import { PartnerModule } from './partner.module.js';

/**
 * The example partner's extension entry (docs/extending.md): its module, its migrations (recorded
 * as `partner.<ClassName>`) and entities, its settings (`PARTNER_…`) and the names of the
 * connector and publisher it provides (checked before the database starts). Given to
 * `main({ extensions })` (main.ts) or `AppModule.forRoot`; `RECEIVER_EXTENSIONS` names this
 * module (built: `dist/examples/partner-module/extension.js`) for `npm run migration:run` and the
 * TypeORM CLI.
 */
export const partnerExtension = defineExtension({
  name: 'partner',
  module: PartnerModule,
  migrations: [PartnerTables1796700000000],
  entities: PARTNER_ENTITIES,
  config: partnerConfig,
  walletConnectors: ['partner-table'],
  eventPublishers: ['partner-table'],
});

/** What `RECEIVER_EXTENSIONS` reads. */
export const extensions = [partnerExtension];
