import { Controller, HttpCode, Post, UseFilters, UseGuards, UseInterceptors } from '@nestjs/common';
import {
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiResponse,
  ApiSecurity,
  ApiTags,
} from '@nestjs/swagger';
import { ErrorResponseDto } from '../../platform/common/error-response.dto.js';
import type { CallbackRequestState } from './callback-request.js';
import { CallbackBody } from './callback-body.decorator.js';
import { CONTENT_ENCODING_PATTERN } from './callback-body.middleware.js';
import { CallbackResponseInterceptor } from './callback-response.interceptor.js';
import { CallbackExceptionFilter } from './callback-exception.filter.js';
import { CallbackService } from './callback.service.js';
import type { CallbackResult } from './callback.service.js';
import { CallbackAckDto, CallbackBatchDto } from '../../core/settlement/dto/callback-batch.dto.js';
import { SIGNATURE_FORMAT, SignatureGuard } from './signature.guard.js';
import { API_TAGS } from '../../platform/common/api-tags.js';

const error = (description: string, code: string, message: string) => ({
  description,
  type: ErrorResponseDto,
  example: { success: false, error: { code, message } },
});

/**
 * `POST /sportapi/callback` (path configurable with `CALLBACK_PATH`): SportAPI's settlement
 * callback (CONTRACT §3–§5). Signature guard → {@link CallbackService.receive} → 200 after COMMIT
 * (response interceptor); failures are answered, recorded and quarantined by
 * {@link CallbackExceptionFilter}.
 */
@ApiTags(API_TAGS.callback.name)
@Controller()
@UseFilters(CallbackExceptionFilter)
export class CallbackController {
  constructor(private readonly callbacks: CallbackService) {}

  @Post()
  @HttpCode(200)
  @UseGuards(SignatureGuard)
  @UseInterceptors(CallbackResponseInterceptor)
  @ApiOperation({
    summary: 'Receive a batch of coupon snapshots (exactly-once settlement)',
    description:
      'Body signed with HMAC-SHA256 over the exact bytes: `X-Signature: sha256=<hex>` (bare hex accepted). ' +
      'Answered 200 only after COMMIT; a redelivered batch answers 200 with `duplicate: true` and moves no money. ' +
      'With `CALLBACK_MODE=inbox` the COMMIT stores the verified, validated batch in the inbox and workers apply it moments later.\n\n' +
      '**Try it out cannot sign the body**: it sends the X-Signature typed into it, and a signature made for other bytes ' +
      'answers 401 `invalid_signature`. Sign the exact bytes and send those: ' +
      '`openssl dgst -sha256 -hmac "$SECRET" -hex < batch.json`, then `curl --data-binary @batch.json` ' +
      '(README, "Send a first batch by hand"; docs/api.md), or let the simulator sign and send: ' +
      '`npm run sportapi -- send batch.json --url http://127.0.0.1:3000 --secret "$SECRET"` (docs/simulator.md).',
  })
  @ApiSecurity('signature')
  @ApiHeader({
    name: 'X-Signature',
    required: true,
    description: SIGNATURE_FORMAT,
    schema: { type: 'string', pattern: '^(?:sha256=)?[0-9a-fA-F]{64}$' },
  })
  @ApiHeader({
    name: 'X-Request-Id',
    required: false,
    description: 'correlation id, logged with the batchId',
  })
  @ApiHeader({
    name: 'Content-Encoding',
    required: false,
    description:
      'identity, gzip (x-gzip) or deflate, in any case; another is 415. The signature is over the decoded bytes',
    schema: { type: 'string', pattern: CONTENT_ENCODING_PATTERN, example: 'gzip' },
  })
  @ApiBody({
    type: CallbackBatchDto,
    examples: {
      batch: {
        value: {
          batchId: 'b-2026-11-30-000123',
          couponCount: 2,
          coupons: [
            {
              coupon_code: '000000000272',
              status: 2,
              realWin: '185.50',
              events: [
                { uuid: '9b2f6a1e-3c1d-4c55-9d0e-0d6f3f1a2b01', status: 2 },
                { uuid: '9b2f6a1e-3c1d-4c55-9d0e-0d6f3f1a2b02', status: 2 },
              ],
            },
            {
              coupon_code: '000000000273',
              status: 1,
              realWin: null,
              events: [{ uuid: '0c8e1f44-7a52-4f0e-a9a3-5c1b2d3e4f05', status: 0 }],
            },
          ],
        },
      },
    },
  })
  @ApiOkResponse({
    type: CallbackAckDto,
    description: 'committed (or the same batch was committed before)',
    example: { success: true, processed: 2 },
  })
  @ApiResponse({
    status: 400,
    ...error(
      'malformed JSON, schema violation, couponCount mismatch, duplicate keys',
      'validation_failed',
      'the batch does not match the contract',
    ),
  })
  @ApiResponse({
    status: 401,
    ...error('signature missing or wrong', 'invalid_signature', 'signature missing or wrong'),
  })
  @ApiResponse({
    status: 409,
    ...error(
      'same batchId, different body (quarantined)',
      'batch_conflict',
      'batch b-1 was delivered before with a different body',
    ),
  })
  @ApiResponse({
    status: 413,
    ...error('body over the limit (default 2 MiB)', 'payload_too_large', 'body over 2097152 bytes'),
  })
  @ApiResponse({
    status: 415,
    ...error(
      'not application/json, or an encoding other than gzip/deflate',
      'unsupported_media_type',
      'Content-Type must be application/json',
    ),
  })
  @ApiResponse({
    status: 503,
    ...error(
      'transient failure, rolled back; SportAPI retries',
      'transient_failure',
      'temporarily unavailable, retry later',
    ),
  })
  receive(@CallbackBody() request: CallbackRequestState): Promise<CallbackResult> {
    return this.callbacks.receive(request);
  }
}
