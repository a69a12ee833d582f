import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiResponse, ApiTags } from '@nestjs/swagger';
import { API_TAGS } from '../common/api-tags.js';
import { SCOPES } from './api-keys.js';
import type { Scope } from './api-keys.js';
import { Actor, RequireScope } from './require-scope.decorator.js';

/** What this receiver is set up to do, for a client to offer only what works (docs/console.md). */
export class ReceiverSettingsView {
  @ApiProperty({
    example: true,
    description:
      'SportAPI polling is on (`SPORTAPI_BASE_URL` set): `POST /coupons/{coupon_code}/reconcile` works; off, it answers 501 `polling_disabled` (CONTRACT §9)',
  })
  polling: boolean;
  @ApiProperty({
    example: true,
    description: 'scheduled reconciliation runs (polling on and `RECONCILE_INTERVAL` not off; CONTRACT §9)',
  })
  scheduledReconciliation: boolean;
  @ApiProperty({
    example: 'http',
    type: String,
    nullable: true,
    description:
      '`WALLET_CONNECTOR` in force; null: none, the wallet outbox delivers nothing (docs/wallet.md)',
  })
  walletConnector: string | null;
  @ApiProperty({
    example: { '1': 'PENDING', '2': 'WIN', '3': 'REFUND', '4': 'LOSS', '15': 'RECALCULATION' },
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'the kind of each coupon status code (`STATUS_MAP`, CONTRACT §6); any other code is UNKNOWN',
  })
  statusKinds: Record<string, string>;
}

/**
 * Token of the {@link ReceiverSettingsView} `GET /auth/whoami` shows: the app gives it
 * (`AuthModule.forRoot`) from the slices it is read from (polling, reconciliation, wallet,
 * settlement), features above auth that auth does not import.
 */
export const RECEIVER_SETTINGS = Symbol('RECEIVER_SETTINGS');

/** `GET /auth/whoami`: the name and scopes of the presented key, never its secret. */
export class WhoAmIView {
  @ApiProperty({ example: 'ops-desk', description: 'the name recorded as the actor of what the key does' })
  name: string;
  @ApiProperty({ example: ['read', 'operate'], enum: SCOPES, isArray: true }) scopes: Scope[];
  @ApiProperty({ type: ReceiverSettingsView }) receiver: ReceiverSettingsView;
}

/**
 * Which key this is (CONTRACT §10): the operator console signs in with it and shows the actions
 * the key's scopes cannot use as disabled, naming the scope they need (docs/console.md).
 */
@ApiTags(API_TAGS.operatorConsole.name)
@Controller('auth')
export class WhoAmIController {
  constructor(@Inject(RECEIVER_SETTINGS) private readonly receiver: ReceiverSettingsView) {}

  @Get('whoami')
  @RequireScope('read')
  @ApiOperation({
    summary: "The presented key's name and scopes",
    description:
      'For clients such as the operator console to know what a key may do before trying: its scopes, and what the ' +
      'receiver is set up to do (`receiver`: polling, the wallet connector, the status codes). Scope read, as every ' +
      'GET; a key without it is answered 403 `insufficient_scope`, whose message names the key and its scopes.',
  })
  @ApiResponse({
    status: 200,
    type: WhoAmIView,
    description: 'the key',
    example: {
      name: 'ops-desk',
      scopes: ['read', 'operate'],
      receiver: {
        polling: true,
        scheduledReconciliation: true,
        walletConnector: 'http',
        statusKinds: { '1': 'PENDING', '2': 'WIN', '3': 'REFUND', '4': 'LOSS', '15': 'RECALCULATION' },
      },
    },
  })
  whoami(@Actor() actor: Actor): WhoAmIView {
    return {
      name: actor.name,
      scopes: [...actor.scopes],
      receiver: { ...this.receiver, statusKinds: { ...this.receiver.statusKinds } },
    };
  }
}
