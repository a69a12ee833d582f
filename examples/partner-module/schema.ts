import { PARTNER_ENTITIES } from './entities.js';
import { PartnerTables1796700000000 } from './migrations/1796700000000-PartnerTables.js';

/**
 * The schema part of the example partner's extension (docs/extending.md#schema): its name, its
 * migrations and its entities, importing TypeORM and nothing of the receiver, so that the
 * command-line tools load it alone: `RECEIVER_EXTENSIONS=dist/examples/partner-module/schema.js`
 * for `npm run migration:run` and `npm run typeorm -- schema:log`. `extension.ts` adds the module.
 */
export const partnerSchema = {
  name: 'partner',
  migrations: [PartnerTables1796700000000],
  entities: PARTNER_ENTITIES,
};

/** What `RECEIVER_EXTENSIONS` reads. */
export const extensions = [partnerSchema];
