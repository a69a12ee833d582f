import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Response } from 'express';
import { stringify as stringifyLossless } from 'lossless-json';
import { Observable, map } from 'rxjs';

/**
 * Answers an object result as JSON written by lossless-json, so numbers kept as `LosslessNumber`s
 * (stored event fields too big or too precise for a double, CONTRACT §3) go out with the digits
 * they came with instead of being rounded or serialised as objects.
 */
@Injectable()
export class LosslessJsonInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const res = context.switchToHttp().getResponse<Response>();
    return next.handle().pipe(
      map((body: unknown) => {
        if (body === null || typeof body !== 'object') return body;
        res.type('application/json');
        return stringifyLossless(body);
      }),
    );
  }
}
