import { Injectable } from '@nestjs/common';

/**
 * A table the posting statement also writes for the operations it inserts: an outbox (the
 * wallet's, the settlement events'), so that its rows commit with the money or not at all
 * (docs/wallet.md, "The outbox"). The ledger knows nothing of it but this.
 */
export interface PostedOperationWriter {
  /** In errors: `wallet`, `rabbitmq`. */
  readonly name: string;
  /**
   * The body of a data-modifying CTE reading the operations inserted now from the CTE named
   * `inserted` (columns id, operation_key, type, account_id, currency, delta); empty: nothing.
   */
  insertSql(inserted: string): string;
}

/**
 * The {@link PostedOperationWriter}s of the application, registered by their modules while the
 * application starts; fixed at the first posting (the posting statement is prepared once per
 * connection under one name, so its text never changes afterwards).
 */
@Injectable()
export class PostedOperationWriters {
  private readonly writers: PostedOperationWriter[] = [];
  private fixed: string[] | undefined;

  /** @throws Error once a posting has been built: registration belongs to the start. */
  register(writer: PostedOperationWriter): void {
    if (this.fixed)
      throw new Error(`posted operation writer ${writer.name} registered after the first posting`);
    this.writers.push(writer);
  }

  /** The CTE bodies, reading the inserted operations from `inserted`. */
  sql(inserted: string): string[] {
    this.fixed ??= this.writers.map((w) => w.insertSql(inserted)).filter((s) => s.length > 0);
    return this.fixed;
  }
}
