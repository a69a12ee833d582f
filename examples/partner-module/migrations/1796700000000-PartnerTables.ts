import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The example partner's tables (docs/extending.md#schema), each in a schema of its own: the
 * wallet connector's balances and transactions, the hook's loyalty points and frozen accounts,
 * the publisher's received events. Recorded as `partner.PartnerTables1796700000000`; they were
 * created by `CREATE TABLE IF NOT EXISTS` at start before, hence `IF NOT EXISTS` here once.
 */
export class PartnerTables1796700000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE SCHEMA IF NOT EXISTS partner_wallet;
      CREATE TABLE IF NOT EXISTS partner_wallet.balances (
        account_id text NOT NULL,
        currency   text NOT NULL,
        balance    numeric NOT NULL DEFAULT 0,
        PRIMARY KEY (account_id, currency)
      );
      CREATE TABLE IF NOT EXISTS partner_wallet.transactions (
        transaction_id text PRIMARY KEY,
        body_sha256    text NOT NULL,
        account_id     text NOT NULL,
        currency       text NOT NULL,
        amount         numeric NOT NULL,
        applied_at     timestamptz NOT NULL DEFAULT now()
      );
      CREATE SCHEMA IF NOT EXISTS partner_loyalty;
      CREATE TABLE IF NOT EXISTS partner_loyalty.points (
        operation_key text PRIMARY KEY,
        account_id    text NOT NULL,
        coupon_code   text NOT NULL,
        points        bigint NOT NULL,
        batch_id      text NOT NULL,
        awarded_at    timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE IF NOT EXISTS partner_loyalty.frozen_accounts (
        account_id text PRIMARY KEY,
        reason     text NOT NULL
      );
      CREATE SCHEMA IF NOT EXISTS partner_events;
      CREATE TABLE IF NOT EXISTS partner_events.received (
        event_id    text PRIMARY KEY,
        account_id  text NOT NULL,
        body        jsonb NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now(),
        seq         bigserial NOT NULL
      );`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP SCHEMA partner_events, partner_loyalty, partner_wallet CASCADE');
  }
}
