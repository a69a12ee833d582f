import { Global, Module } from '@nestjs/common';
import { DeliveryAttemptRepository } from './delivery-attempt.repository.js';
import { DeliveryAttemptWriter } from './delivery-attempt.writer.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import { DeliveryObserver } from './delivery-observer.js';

/**
 * The callback's deliveries (CONTRACT §8): the one writer of `delivery_attempts`, the background
 * writer of failed deliveries' attempts, the observer every answered delivery passes through (one
 * log line, the metrics, the background-work governor's intake signal) and the delivery metrics.
 * Global: the callback, the inbox, the quarantine, the governor and the shutdown state use it.
 */
@Global()
@Module({
  providers: [DeliveryAttemptRepository, DeliveryAttemptWriter, DeliveryMetrics, DeliveryObserver],
  exports: [DeliveryAttemptRepository, DeliveryAttemptWriter, DeliveryMetrics, DeliveryObserver],
})
export class DeliveriesModule {}
