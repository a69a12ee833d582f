import { Module } from '@nestjs/common';
import { CallbacksModule } from './callbacks.module.js';
import { InboxController } from '../inbox/inbox.controller.js';
import { QuarantineController } from '../quarantine/quarantine.controller.js';

/**
 * Operator endpoints of the callback on the partner API: the quarantine (`/callbacks/quarantine`)
 * and the inbox (`/callbacks/inbox`). A module of their own because {@link CallbacksModule} is
 * mounted under `CALLBACK_PATH`.
 */
@Module({
  imports: [CallbacksModule],
  controllers: [QuarantineController, InboxController],
})
export class CallbackAdminModule {}
