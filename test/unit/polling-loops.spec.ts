import { Logger } from '@nestjs/common';
import { PollingLoops, StepFound } from '../../src/platform/background/polling-loops.js';

/** Resolves once nothing has happened for a few event-loop turns (every loop asleep or done). */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 50));

/**
 * Three loops whose steps answer `answers` in call order (then false), sleeping a minute when
 * they find nothing: how many steps ran in all once they are all asleep again.
 */
async function stepsRun(answers: StepFound[]): Promise<number> {
  let calls = 0;
  const loops = new PollingLoops(new Logger('test'), async () => {
    await Promise.resolve();
    return answers[calls++] ?? false;
  });
  loops.start(3, 60_000);
  await settle();
  await loops.stop();
  return calls;
}

describe('PollingLoops (issue 40: loops join one by one)', () => {
  it('no work: each loop steps once and sleeps', async () => {
    expect(await stepsRun([])).toBe(3);
  });

  it('work done (true): that loop steps again at once, the sleeping ones stay asleep', async () => {
    // Loops 1 and 2 find nothing and sleep; loop 3 does work, steps again, finds nothing.
    expect(await stepsRun([false, false, true])).toBe(4);
  });

  it("more waiting ('more'): that loop steps again and wakes one sleeping loop, not both", async () => {
    // Loop 3 wakes loop 1, which steps once more; loop 2 sleeps on.
    expect(await stepsRun([false, false, 'more'])).toBe(5);
  });
});
