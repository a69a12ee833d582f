import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiResponse, ApiTags } from '@nestjs/swagger';
import { API_TAGS } from '../common/api-tags.js';
import { SCOPES } from './api-keys.js';
import type { Scope } from './api-keys.js';
import { Actor, RequireScope } from './require-scope.decorator.js';

/** `GET /auth/whoami`: the name and scopes of the presented key, never its secret. */
export class WhoAmIView {
  @ApiProperty({ example: 'ops-desk', description: 'the name recorded as the actor of what the key does' })
  name: string;
  @ApiProperty({ example: ['read', 'operate'], enum: SCOPES, isArray: true }) scopes: Scope[];
}

/**
 * Which key this is (CONTRACT §10): the operator console signs in with it and shows the actions
 * the key's scopes cannot use as disabled, naming the scope they need (docs/console.md).
 */
@ApiTags(API_TAGS.operatorConsole.name)
@Controller('auth')
export class WhoAmIController {
  @Get('whoami')
  @RequireScope('read')
  @ApiOperation({
    summary: "The presented key's name and scopes",
    description:
      'For clients such as the operator console to know what a key may do before trying. Scope read, as every GET; ' +
      'a key without it is answered 403 `insufficient_scope`, whose message names the key and its scopes.',
  })
  @ApiResponse({
    status: 200,
    type: WhoAmIView,
    description: 'the key',
    example: { name: 'ops-desk', scopes: ['read', 'operate'] },
  })
  whoami(@Actor() actor: Actor): WhoAmIView {
    return { name: actor.name, scopes: [...actor.scopes] };
  }
}
