import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';

/**
 * A job's run every `everyMs`, on the app's {@link SchedulerRegistry} interval `name`: never two
 * runs of this replica at once (a tick while one is in progress is skipped), a failed run logged as
 * `<what> failed: <message>`. Used by the delivery rollup and the retention job; a run itself takes
 * its advisory lock, so that one replica at a time works.
 */
export class IntervalRuns {
  private current: Promise<unknown> | undefined;

  constructor(
    private readonly scheduler: SchedulerRegistry,
    private readonly name: string,
    private readonly logger: Logger,
    private readonly what: string,
    private readonly run: () => Promise<unknown>,
  ) {}

  /** Runs every `everyMs` (milliseconds), and once at once. */
  start(everyMs: number): void {
    const tick = () => {
      if (this.current) return;
      this.current = this.run()
        .catch((err: unknown) => this.logger.error(`${this.what} failed: ${(err as Error).message}`))
        .finally(() => (this.current = undefined));
    };
    this.scheduler.addInterval(this.name, setInterval(tick, everyMs));
    tick();
  }

  /**
   * Stops the interval and waits for the run in progress: until it ends, or at most `waitMs`
   * milliseconds when given (what that run does then commits or not on its own).
   */
  async stop(waitMs?: number): Promise<void> {
    if (this.scheduler.doesExist('interval', this.name)) this.scheduler.deleteInterval(this.name);
    if (waitMs === undefined) return void (await this.current);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.current,
      new Promise((done) => {
        timer = setTimeout(done, waitMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }
}
