import { Logger } from '@nestjs/common';

/**
 * A permit to take one step of work (the background-work governor's `WorkGate.acquire`): resolves
 * with its release, or undefined when `signal` was aborted first.
 */
export type Permit = (signal: AbortSignal) => Promise<(() => void) | undefined>;

/**
 * What a step found: `false` no work (the loop sleeps); `true` work, done (the loop steps again at
 * once); `'more'` work, and more waiting than one step takes (it also wakes one sleeping loop).
 */
export type StepFound = boolean | 'more';

/**
 * `count` worker loops calling `step` back to back while it finds work, sleeping `intervalMs` when
 * it finds none (woken early by {@link wake}). A plain loop rather than a scheduler interval: a
 * worker drains a backlog without pause, never runs twice at once, and {@link stop} lets each
 * finish the step in hand. A step that throws is logged and counts as no work found. A step that
 * finds more work than it takes wakes one more loop, not all: loops join one by one as a backlog
 * needs them, and no crowd of loops polls for the same few rows (issue 40). With
 * `permit`, each step first waits for one (held during the step only), so that fewer loops than
 * `count` may work at once (docs/background-work.md). Used by the inbox and wallet outbox workers.
 */
export class PollingLoops {
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly sleepers = new Set<() => void>();
  private stopping = new AbortController();

  constructor(
    private readonly logger: Logger,
    private readonly step: () => Promise<StepFound>,
    private readonly permit?: Permit,
  ) {}

  /** Whether the loops run. */
  get started(): boolean {
    return this.running;
  }

  /** Starts `count` loops (once; later calls only wake them). */
  start(count: number, intervalMs: number): void {
    if (this.running) return this.wake();
    this.running = true;
    this.stopping = new AbortController();
    for (let i = 0; i < count; i++) this.loops.push(this.loop(intervalMs));
  }

  /** Ends the current sleep of every idle loop. */
  wake(): void {
    for (const wakeUp of [...this.sleepers]) wakeUp();
  }

  /** Stops the loops once their step in hand is done. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    this.wake();
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** Ends the sleep of one idle loop, if one sleeps. */
  private wakeOne(): void {
    const [first] = this.sleepers;
    first?.();
  }

  private async loop(intervalMs: number): Promise<void> {
    while (this.running) {
      let found: StepFound = false;
      const release = this.permit ? await this.permit(this.stopping.signal) : () => undefined;
      if (!release) break;
      try {
        found = await this.step();
      } catch (err) {
        this.logger.error(`worker step failed: ${(err as Error).message}`);
      } finally {
        release();
      }
      if (found === 'more') this.wakeOne();
      else if (!found && this.running) await this.sleep(intervalMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }
}
