import { Module } from '@nestjs/common';
import { CallbacksModule } from '../callbacks.module.js';
import { QuarantineController } from './quarantine.controller.js';

/**
 * The quarantine endpoints (`/callbacks/quarantine`, partner API). A module of their own because
 * {@link CallbacksModule} is mounted under `CALLBACK_PATH`.
 */
@Module({
  imports: [CallbacksModule],
  controllers: [QuarantineController],
})
export class QuarantineModule {}
