import { Module } from '@nestjs/common';
import { AuditController } from './audit.controller.js';
import { AuditRepository } from './audit.repository.js';
import { AuditService } from './audit.service.js';

/**
 * Read side of the delivery audit (CONTRACT §8) at `/callbacks/...`; kept out of
 * `CallbacksModule`, whose routes are mounted under `CALLBACK_PATH`.
 */
@Module({
  controllers: [AuditController],
  providers: [AuditRepository, AuditService],
})
export class AuditModule {}
