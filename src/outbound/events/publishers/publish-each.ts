import { excerpt } from '../../outbox/outbox-rules.js';
import type { OutboxDelivery } from '../../outbox/outbox.types.js';
import type { PublishedEvent, PublishRequest } from '../event-publisher.js';

/**
 * One publish call of a broker publisher: `open()` gives its connection (opened once, shared by
 * the calls), then `publishOne` publishes each event with it, all at once. Every event is `retry`
 * when the connection cannot be opened (`<broker> unreachable: <why>`), and when the outbox gave
 * up on the call while it opened: publishing nothing then, for the rows come again in order and
 * publishing late could put an event after its account's next one.
 */
export async function publishEach<C>(
  broker: string,
  { events, signal }: PublishRequest,
  open: () => Promise<C>,
  publishOne: (connection: C, e: PublishedEvent) => Promise<OutboxDelivery>,
): Promise<OutboxDelivery[]> {
  let connection: C;
  try {
    connection = await open();
  } catch (err) {
    const reason = excerpt(`${broker} unreachable: ${(err as Error).message}`);
    return events.map((): OutboxDelivery => ({ outcome: 'retry', reason }));
  }
  if (signal.aborted)
    return events.map((): OutboxDelivery => ({ outcome: 'retry', reason: 'abandoned while connecting' }));
  return Promise.all(events.map((e) => publishOne(connection, e)));
}
