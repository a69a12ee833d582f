import { Module } from '@nestjs/common';
import { EventPublisher } from '../../src/extensions.js';
import type { OutboxDelivery, PublishRequest } from '../../src/extensions.js';

/**
 * A settlement event publisher for tests: answers every event what {@link answer} says at the
 * time (a refusal until a test changes it), and keeps the ids of those it answered `delivered`.
 */
export class ScriptedPublisher extends EventPublisher {
  answer: OutboxDelivery = { outcome: 'refused', reason: 'scripted refusal', status: 422 };
  readonly published: string[] = [];

  constructor(readonly name: string) {
    super();
  }

  publish({ events }: PublishRequest): Promise<OutboxDelivery[]> {
    const answer = this.answer;
    if (answer.outcome === 'delivered') this.published.push(...events.map((e) => e.event.eventId));
    return Promise.resolve(events.map(() => answer));
  }
}

/**
 * Publishers named `names` and the module that provides them, to give as an extension
 * (`useTestApp({ EVENT_PUBLISHERS: names.join(',') }, { extensions: [module] })`).
 */
export function scriptedPublishers(...names: string[]) {
  const publishers = names.map((name) => new ScriptedPublisher(name));
  @Module({
    providers: publishers.map((p) => ({ provide: `scripted-publisher:${p.name}`, useValue: p })),
  })
  class ScriptedPublishersModule {}
  return {
    module: ScriptedPublishersModule,
    publisher: Object.fromEntries(publishers.map((p) => [p.name, p])),
  };
}
