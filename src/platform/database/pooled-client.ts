import { Socket } from 'node:net';
import { Logger } from '@nestjs/common';
import pg from 'pg';

/**
 * The pool's client class (pg-pool's `Client` option). Every connection gets a permanent 'error'
 * listener: a backend terminated while its client sits idle or between hand-overs (admin
 * shutdown, failover) emits 'error' on the client, and without a listener Node would end the
 * process; the broken client is discarded on its next use and that request is answered 503.
 * Each client also owns its socket (node-postgres' `stream` option), which {@link Tx} corks while
 * it writes a group of statements.
 */
export class PooledClient extends pg.Client {
  private static readonly logger = new Logger('Database');
  /** This connection's TCP or Unix socket, as node-postgres connects and writes it. */
  readonly socket: Socket;

  constructor(config: string | pg.ClientConfig = {}) {
    const socket = new Socket();
    super({ ...(typeof config === 'string' ? { connectionString: config } : config), stream: () => socket });
    this.socket = socket;
    this.on('error', (err: Error) => PooledClient.logger.warn(`database connection lost: ${err.message}`));
  }
}
