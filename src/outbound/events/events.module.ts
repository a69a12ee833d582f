import { DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { OutboxModule } from '../outbox/outbox.js';
import { EventOutboxes } from './event-outboxes.js';
import { EventsController } from './events.controller.js';
import type { EventsConfig } from './events.config.js';
import { NatsPublisherModule } from './publishers/nats.publisher.js';
import { RabbitMqPublisherModule } from './publishers/rabbitmq.publisher.js';

/**
 * Settlement events to the bookmaker's message broker (docs/events.md): the outbox of each
 * publisher `EVENT_PUBLISHERS` names, its workers and its operator endpoints. The RabbitMQ and NATS
 * JetStream publishers are added when named; any other name is a publisher of a module the app
 * was given (`AppModule.forRoot(config, { extensions })`, docs/extending.md).
 */
@Module({})
export class EventsModule {
  static forRoot(config: EventsConfig): DynamicModule {
    const named = config.publishers;
    return {
      module: EventsModule,
      imports: [
        DiscoveryModule,
        OutboxModule,
        ...(named.includes('rabbitmq') ? [RabbitMqPublisherModule] : []),
        ...(named.includes('nats') ? [NatsPublisherModule] : []),
      ],
      controllers: [EventsController],
      providers: [EventOutboxes],
      exports: [EventOutboxes],
    };
  }
}
