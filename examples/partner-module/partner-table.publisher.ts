import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EventPublisher } from '../../src/extensions.js';
import type { OutboxDelivery, PublishRequest } from '../../src/extensions.js';

/**
 * An example event publisher (`EVENT_PUBLISHERS=partner-table` with the partner's module given to
 * `AppModule.forRoot`; docs/extending.md): instead of a broker, each settlement event lands in a
 * table of the partner's own schema (`partner_events.received`, migrations/), once per event id (a repeat is `delivered`: the consumer's
 * idempotency), in the order the outbox hands them over (`seq`). A database error is `retry`.
 */
@Injectable()
export class PartnerTablePublisher extends EventPublisher {
  readonly name = 'partner-table';

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    super();
  }

  async publish({ events }: PublishRequest): Promise<OutboxDelivery[]> {
    try {
      const rows = (await this.dataSource.query(
        `INSERT INTO partner_events.received (event_id, account_id, body)
         SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[]) ON CONFLICT (event_id) DO NOTHING
         RETURNING event_id`,
        [
          events.map((e) => e.event.eventId),
          events.map((e) => e.event.accountId),
          events.map((e) => e.body.toString('utf8')),
        ],
      )) as { event_id: string }[];
      const fresh = new Set(rows.map((r) => r.event_id));
      return events.map((e) => ({
        outcome: 'delivered',
        answer: fresh.has(e.event.eventId) ? 'stored' : 'stored before',
      }));
    } catch (err) {
      return events.map(() => ({ outcome: 'retry', reason: (err as Error).message }));
    }
  }
}
