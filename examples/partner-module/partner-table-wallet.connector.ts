import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { WalletConnector } from '../../src/extensions.js';
import type { WalletDelivery, WalletDeliveryRequest } from '../../src/extensions.js';

/**
 * An example wallet connector (`WALLET_CONNECTOR=partner-table` with {@link PartnerModule} given
 * to `AppModule.forRoot`; docs/extending.md): instead of an HTTP call, it applies each transaction to tables of the
 * partner's own schema `partner_wallet` (migrations/1796700000000-PartnerTables.ts: `transactions`
 * keeps each transaction id once with the SHA-256 of its body, `balances` the balance per account
 * and currency) in one transaction of its own: a transaction id is applied
 * once (the same body again is `delivered`, another body `conflict`), a debit above the balance is
 * `refused`, a database error `retry`. It runs on the receiver's database here; a partner's module
 * would use its own connection.
 */
@Injectable()
export class PartnerTableWalletConnector extends WalletConnector {
  readonly name = 'partner-table';
  private readonly logger = new Logger('PartnerTableWallet');

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    super();
  }

  async deliver({ transaction: t, body }: WalletDeliveryRequest): Promise<WalletDelivery> {
    const hash = createHash('sha256').update(body).digest('hex');
    const delta = t.direction === 'credit' ? t.amount : `-${t.amount}`;
    try {
      return await this.dataSource.transaction(async (m) => {
        const inserted = (await m.query(
          `INSERT INTO partner_wallet.transactions (transaction_id, body_sha256, account_id, currency, amount)
           VALUES ($1, $2, $3, $4, $5) ON CONFLICT (transaction_id) DO NOTHING RETURNING transaction_id`,
          [t.transactionId, hash, t.accountId, t.currency, delta],
        )) as unknown[];
        if (!inserted.length) {
          const [known] = (await m.query(
            'SELECT body_sha256 FROM partner_wallet.transactions WHERE transaction_id = $1',
            [t.transactionId],
          )) as { body_sha256: string }[];
          return known.body_sha256 === hash
            ? { outcome: 'delivered', answer: 'applied before' }
            : { outcome: 'conflict', reason: `transaction ${t.transactionId} was applied with another body` };
        }
        const [row] = (await m.query(
          `INSERT INTO partner_wallet.balances AS b (account_id, currency, balance) VALUES ($1, $2, $3)
           ON CONFLICT (account_id, currency) DO UPDATE SET balance = b.balance + excluded.balance
           RETURNING balance::text AS balance`,
          [t.accountId, t.currency, delta],
        )) as { balance: string }[];
        if (row.balance.startsWith('-')) {
          // Undo both writes: the transaction is refused, not applied.
          throw new RefusedError(`balance of ${t.accountId} is below ${t.amount} ${t.currency}`);
        }
        return { outcome: 'delivered', answer: `balance ${row.balance}` };
      });
    } catch (err) {
      if (err instanceof RefusedError) return { outcome: 'refused', reason: err.message };
      this.logger.warn(`transaction ${t.transactionId} not applied: ${(err as Error).message}`);
      return { outcome: 'retry', reason: (err as Error).message };
    }
  }
}

/** A definite refusal, thrown to roll the partner's transaction back. */
class RefusedError extends Error {}
