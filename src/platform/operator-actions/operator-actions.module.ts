import { Global, Module } from '@nestjs/common';
import { OperatorActionLog } from './operator-action-log.js';
import { OperatorActionsController } from './operator-actions.controller.js';
import { OperatorActionsRepository } from './operator-actions.repository.js';

/**
 * The operator actions log (docs/api.md#operator-actions): {@link OperatorActionLog}, which every
 * acting service records through, and `GET /operator-actions`. Global: every feature module acts.
 */
@Global()
@Module({
  controllers: [OperatorActionsController],
  providers: [OperatorActionsRepository, OperatorActionLog],
  exports: [OperatorActionLog, OperatorActionsRepository],
})
export class OperatorActionsModule {}
