import { BeforeApplicationShutdown, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';

/** When and how an {@link IntervalJob} runs. */
export interface IntervalSchedule {
  /** Name of its interval in the app's {@link SchedulerRegistry}. */
  name: string;
  /** The run in a log line: `<what> failed: <message>`. */
  what: string;
  /** Milliseconds between runs; 0: not scheduled. */
  everyMs: number;
  /** Logged at bootstrap when `everyMs` is 0 (default: nothing). */
  offMessage?: string;
  /** false: the first run comes after one interval rather than at bootstrap (default true). */
  runAtStart?: boolean;
  /** Milliseconds shutdown waits for a run in progress at the most (default: until it ends). */
  shutdownWaitMs?: number;
}

/**
 * A job run every `everyMs` on the app's {@link SchedulerRegistry} (the scheduled reconciliation,
 * the delivery rollup, the retention job): started at bootstrap, never two runs of this replica at
 * once (a tick while one is in progress is skipped), a failed run logged as `<what> failed:
 * <message>`. At shutdown {@link stopping} is aborted (a run waiting for a permit of the
 * background-work governor gives up) and the run in progress is waited for. A run itself takes its
 * advisory lock, so that one replica at a time works.
 */
export abstract class IntervalJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  /** Aborted at shutdown: a run in progress stops at its next permit. */
  protected readonly stopping = new AbortController();
  private current: Promise<unknown> | undefined;

  constructor(
    private readonly scheduler: SchedulerRegistry,
    protected readonly logger: Logger,
    private readonly schedule: IntervalSchedule,
  ) {}

  /** One run: what the interval calls (tests call it directly). */
  abstract runOnce(): Promise<unknown>;

  onApplicationBootstrap(): void | Promise<void> {
    this.startRuns();
  }

  /**
   * Stops the interval, aborts {@link stopping} and waits for the run in progress: until it ends,
   * or at most `shutdownWaitMs` (what that run does then commits or not on its own).
   */
  async beforeApplicationShutdown(): Promise<void> {
    const { name, shutdownWaitMs } = this.schedule;
    if (this.scheduler.doesExist('interval', name)) this.scheduler.deleteInterval(name);
    this.stopping.abort();
    const current = this.current?.catch(() => undefined);
    if (shutdownWaitMs === undefined) return void (await current);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      current,
      new Promise((done) => {
        timer = setTimeout(done, shutdownWaitMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }

  /**
   * Schedules the runs (logs `offMessage` instead when `everyMs` is 0).
   * @returns whether they were scheduled.
   */
  protected startRuns(): boolean {
    const { name, what, everyMs, offMessage, runAtStart = true } = this.schedule;
    if (everyMs === 0) {
      if (offMessage) this.logger.log(offMessage);
      return false;
    }
    const tick = () => {
      if (this.current) return;
      this.track(this.runOnce()).catch((err: unknown) =>
        this.logger.error(`${what} failed: ${(err as Error).message}`),
      );
    };
    this.scheduler.addInterval(name, setInterval(tick, everyMs));
    if (runAtStart) tick();
    return true;
  }

  /**
   * Makes `run` the run in progress until it settles: a tick meanwhile is skipped and shutdown
   * waits for it (the interval's runs are; a job may also track the runs it is asked for directly).
   */
  protected track<T>(run: Promise<T>): Promise<T> {
    this.current = run;
    const done = () => {
      if (this.current === run) this.current = undefined;
    };
    run.then(done, done);
    return run;
  }
}
