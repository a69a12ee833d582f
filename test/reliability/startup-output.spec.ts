import { eventually } from '../support/wait.js';
import { portRange, startReceiver, stopReceiver, suiteDatabase } from './support/receiver.js';
import type { Receiver, SuiteDatabase } from './support/receiver.js';

// Issue 38, item 10: a start printed 113 JSON lines, 43 of them route mappings at info, and the
// retention summary as one string of `\n`-joined lines; the `listening on` line was hard to find.
// Now Nest's own lines (modules, controllers, routes) are debug, and the retention run's line has
// its report as a field: at info, a start is a handful of lines.

const [PORT] = portRange(57, 1);

interface Line {
  level: number;
  context?: string;
  msg: string;
  retention?: { applied: boolean; classes: { dataClass: string; keepDays: number | null }[] };
}

describe('start-up output', () => {
  let db: SuiteDatabase;
  let receiver: Receiver | undefined;
  beforeAll(async () => {
    db = await suiteDatabase(2);
  }, 60_000);
  afterAll(async () => {
    await stopReceiver(receiver);
    await db?.close();
  });

  it('a few info lines, `listening on` among them; route mappings at debug; the retention run structured', async () => {
    // LOG_LEVEL=debug: the lines moved to debug are still written, at level 20.
    receiver = await startReceiver(PORT, db.url, { LOG_LEVEL: 'debug' });
    const lines = () =>
      receiver!
        .output()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Line);
    // The first retention run starts with the app; its line ends the start-up output.
    await eventually(async () => lines().some((l) => l.context === 'Retention'), 'the retention run');
    const all = lines();
    const info = all.filter((l) => l.level === 30);
    // The database is migrated already (a first start adds one `Migrations` line).
    expect(info.map((l) => l.context)).toEqual(['Reconciliation', 'Bootstrap', 'Retention']);
    expect(info.filter((l) => l.msg.startsWith('listening on '))).toEqual([
      expect.objectContaining({
        context: 'Bootstrap',
        msg: expect.stringMatching(
          `^listening on http://127.0.0.1:${PORT} \\(callback POST /sportapi/callback`,
        ),
      }),
    ]);
    expect(all.every((l) => !l.msg.includes('\n'))).toBe(true);
    const retention = info.find((l) => l.context === 'Retention')!;
    expect(retention.msg).toBe('retention applied: removed 0 rows, 0 bytes');
    expect({
      applied: retention.retention?.applied,
      classes: retention.retention?.classes.map((c) => [c.dataClass, c.keepDays]),
    }).toEqual({
      applied: true,
      classes: [
        ['batch_ids', 400],
        ['raw_bodies', 90],
        ['snapshots', 90],
        ['delivery_attempts', 400],
        ['outbox', 400],
      ],
    });
    const routes = all.filter((l) => l.context === 'RouterExplorer');
    expect(routes.length).toBeGreaterThan(40);
    expect(routes.every((l) => l.level === 20)).toBe(true);
    for (const context of ['InstanceLoader', 'RoutesResolver', 'NestFactory', 'NestApplication'])
      expect(all.filter((l) => l.context === context && l.level !== 20)).toEqual([]);
  }, 120_000);
});
