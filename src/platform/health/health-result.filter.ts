import { ArgumentsHost, Catch, ExceptionFilter, ServiceUnavailableException } from '@nestjs/common';
import type { Response } from 'express';

/**
 * Answers a failed terminus check with its own body (`{status, info, error, details}`) and 503,
 * instead of the generic error shape of the global filter: probes and operators see which
 * indicator is down.
 */
@Catch(ServiceUnavailableException)
export class HealthResultFilter implements ExceptionFilter {
  catch(exception: ServiceUnavailableException, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (!res.headersSent) res.status(503).json(exception.getResponse());
  }
}
