import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { CallbackRequest, CallbackRequestState } from './callback-request.js';

/** The callback's request state (raw body bytes, timing, request id), as the body middleware left it. */
export const CallbackBody = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): CallbackRequestState | undefined =>
    ctx.switchToHttp().getRequest<CallbackRequest>().callback,
);
