import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  url: string;
  port: number;
  /** Stops listening and ends the open connections (keep-alive ones included). */
  close: () => Promise<void>;
}

/** Starts `server` on `host`:`port` (port 0: a free one); rejects when it cannot listen. */
export async function listen(server: Server, port = 0, host = '127.0.0.1'): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    port: address.port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
