import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;
const ID = Symbol('requestId');

/**
 * The request's correlation id (CONTRACT §3): `X-Request-Id` as sent when it is a sane token, else
 * a new UUID; the same value for the whole request, whoever asks first (log lines, the callback's
 * state, an answer refused while shutting down).
 */
export function requestIdOf(req: IncomingMessage): string {
  const held = req as IncomingMessage & { [ID]?: string };
  if (held[ID] === undefined) {
    const sent = req.headers['x-request-id'];
    held[ID] = typeof sent === 'string' && SANE.test(sent) ? sent : randomUUID();
  }
  return held[ID];
}
