import { createConnection, createServer, Server, Socket } from 'node:net';

/** A direction of the proxied byte stream. */
export type Direction = 'toServer' | 'toClient';

/**
 * A fault armed on the next chunk towards the server that contains `marker`, on a connection
 * that has sent `after` before (when given: e.g. the COMMIT of the transaction that inserted an
 * inbox row, not another connection's).
 */
export interface Trigger {
  /** A marker, or several: the first chunk containing any of them fires. */
  marker: string | string[];
  after?: string | string[];
  /**
   * `hold`: that chunk and everything after it, both ways, stop on that connection (hung before
   * the server sees it); `answerLost`: the chunk reaches the server, its answer is held (the
   * server acts, the client never hears); `reset`: the connection is reset instead.
   */
  then: 'hold' | 'answerLost' | 'reset';
  /**
   * Called once when the fault takes effect: at once for `hold` and `reset`; for `answerLost` when
   * the server's answer to the chunk arrives (and is held), i.e. after the server acted on it (a
   * COMMIT done). E.g. SIGKILL of the client process at that exact point.
   */
  onFired?: () => void;
  /** `answerLost` only: call `onFired` at the first held answer chunk containing this (e.g. `COMMIT`, the tag of its CommandComplete). */
  answerMarker?: string;
}

function includesAny(chunk: Buffer, markers: string | string[]): boolean {
  return (typeof markers === 'string' ? [markers] : markers).some((m) => chunk.includes(m));
}

interface Link {
  /** Sent the trigger's `after` marker. */
  marked: boolean;
  /** Called with the first answer held by an `answerLost` trigger (containing its `answerMarker`). */
  onAnswerHeld?: { marker?: string; fired: () => void };
  client: Socket;
  server: Socket;
  held: Record<Direction, Buffer[]>;
  holding: Record<Direction, boolean>;
  /** Chunks are written in order even with latency: each waits for the one before it. */
  tail: Record<Direction, Promise<void>>;
}

/**
 * A TCP proxy between the receiver and PostgreSQL (or a broker) that fakes what a server does when it hangs
 * rather than refuses (CONTRACT §5): bytes held while connections stay open, latency, resets, and
 * faults armed on a marker in the protocol (e.g. the COMMIT of a transaction). A test utility.
 */
export class TcpProxy {
  private readonly links = new Set<Link>();
  private holdingAll = false;
  private delayMs = 0;
  private trigger: Trigger | undefined;
  /** How many times an armed trigger fired. */
  fired = 0;
  /** Sees every chunk as it arrives, both ways (e.g. to count the requests of one client). */
  tap: ((direction: Direction, chunk: Buffer) => void) | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  /** Listens on a free port of 127.0.0.1 and forwards to `target`. */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const ready: { proxy?: TcpProxy } = {};
    const server = createServer((client) => ready.proxy?.accept(client));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    ready.proxy = new TcpProxy(server, (server.address() as { port: number }).port, target);
    return ready.proxy;
  }

  /** Holds every byte of every connection, open or new, both ways, until {@link release}. */
  hold(): void {
    this.holdingAll = true;
    for (const link of this.links) link.holding = { toServer: true, toClient: true };
  }

  /** Lets every held byte through (in order) and stops holding. */
  release(): void {
    this.holdingAll = false;
    this.trigger = undefined;
    for (const link of this.links) {
      for (const direction of ['toServer', 'toClient'] as const) {
        link.holding[direction] = false;
        for (const chunk of link.held[direction].splice(0)) this.forward(link, direction, chunk);
      }
    }
  }

  /** Delays every chunk by `ms` in both directions (0: none). */
  latency(ms: number): void {
    this.delayMs = ms;
  }

  /** Arms `trigger` for the next chunk towards the server that contains its marker. */
  arm(trigger: Trigger): void {
    this.trigger = trigger;
  }

  /** Resets (RST) every connection. */
  resetAll(): void {
    for (const link of this.links) this.reset(link);
  }

  /** Connections open through the proxy. */
  get connections(): number {
    return this.links.size;
  }

  async close(): Promise<void> {
    this.resetAll();
    await new Promise((done) => this.server.close(done));
  }

  private accept(client: Socket): void {
    const server = createConnection(this.target);
    const link: Link = {
      marked: false,
      client,
      server,
      held: { toServer: [], toClient: [] },
      holding: { toServer: this.holdingAll, toClient: this.holdingAll },
      tail: { toServer: Promise.resolve(), toClient: Promise.resolve() },
    };
    this.links.add(link);
    client.on('data', (chunk: Buffer) => this.receive(link, 'toServer', chunk));
    server.on('data', (chunk: Buffer) => this.receive(link, 'toClient', chunk));
    const end = () => {
      if (!this.links.delete(link)) return;
      client.destroy();
      server.destroy();
    };
    for (const socket of [client, server]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  }

  private receive(link: Link, direction: Direction, chunk: Buffer): void {
    this.tap?.(direction, chunk);
    const trigger = this.trigger;
    if (direction === 'toServer' && trigger?.after && includesAny(chunk, trigger.after)) link.marked = true;
    if (
      direction === 'toServer' &&
      trigger &&
      includesAny(chunk, trigger.marker) &&
      (!trigger.after || link.marked)
    ) {
      this.trigger = undefined;
      this.fired++;
      if (trigger.then === 'reset') {
        this.reset(link);
        return trigger.onFired?.();
      }
      if (trigger.then === 'hold') {
        link.holding = { toServer: true, toClient: true };
        link.held.toServer.push(chunk);
        return trigger.onFired?.();
      }
      this.forward(link, direction, chunk);
      link.holding.toClient = true;
      if (trigger.onFired) link.onAnswerHeld = { marker: trigger.answerMarker, fired: trigger.onFired };
      return;
    }
    if (link.holding[direction]) {
      link.held[direction].push(chunk);
      const held = link.onAnswerHeld;
      if (direction === 'toClient' && held && (!held.marker || chunk.includes(held.marker))) {
        link.onAnswerHeld = undefined;
        held.fired();
      }
    } else this.forward(link, direction, chunk);
  }

  private forward(link: Link, direction: Direction, chunk: Buffer): void {
    const to = direction === 'toServer' ? link.server : link.client;
    // Each chunk leaves `delayMs` after it arrived, in the order chunks arrived.
    const due = Date.now() + this.delayMs;
    link.tail[direction] = link.tail[direction].then(async () => {
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (!to.destroyed) to.write(chunk);
    });
  }

  private reset(link: Link): void {
    this.links.delete(link);
    for (const socket of [link.client, link.server]) {
      try {
        socket.resetAndDestroy();
      } catch {
        socket.destroy(); // not connected yet: nothing to reset
      }
    }
  }
}
