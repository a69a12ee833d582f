import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `operator_actions.client_address` (issues 38 and 39): the client address of the request that
 * took the action (the TCP peer, or `X-Forwarded-For` when the peer is one of `TRUSTED_PROXIES`),
 * so the log says from where as well as with which key. Nullable, no default: older rows and a bulk
 * action's rows have none, and adding it rewrites nothing. As
 * `migration:generate` writes it (test/e2e/schema.e2e.spec.ts checks the entity against it).
 */
export class OperatorActionClientAddress1796610000000 implements MigrationInterface {
  name = 'OperatorActionClientAddress1796610000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "operator_actions" ADD "client_address" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "operator_actions" DROP COLUMN "client_address"`);
  }
}
