import { loadConfig } from '../../src/app.config.js';
import { REQUIRED_ENV } from '../support/secrets.js';

const base = REQUIRED_ENV;
const DAY = 86_400_000;

describe('the retention policy (RETENTION_*, docs/retention.md)', () => {
  it('keeps each class for its default', () => {
    expect(loadConfig(base).retention).toEqual({
      keepMs: {
        batch_ids: 400 * DAY,
        raw_bodies: 90 * DAY,
        snapshots: 90 * DAY,
        delivery_attempts: 400 * DAY,
        outbox: 400 * DAY,
      },
      intervalMs: 3_600_000,
      partitionsAhead: 3,
      archiveClasses: [],
      archiveConnector: 'directory',
      archiveDir: undefined,
      batchRows: 1000,
    });
  });

  it('reads durations in days and off (forever), at or above the floors', () => {
    const r = loadConfig({
      ...base,
      RETENTION_BATCH_IDS: '120d',
      RETENTION_RAW_BODIES: '30 days',
      RETENTION_SNAPSHOTS: 'off',
      RETENTION_DELIVERY_ATTEMPTS: '2000d',
      RETENTION_OUTBOX: '30d',
      RETENTION_INTERVAL: '10m',
    }).retention;
    expect(r.keepMs).toEqual({
      batch_ids: 120 * DAY,
      raw_bodies: 30 * DAY,
      snapshots: null,
      delivery_attempts: 2000 * DAY,
      outbox: 30 * DAY,
    });
    expect(r.intervalMs).toBe(600_000);
  });

  it('refuses a setting below its floor, quoting what was read, naming the variable and the floor', () => {
    expect(() => loadConfig({ ...base, RETENTION_BATCH_IDS: '119d' })).toThrow(
      new Error(
        'Invalid configuration:\n  - RETENTION_BATCH_IDS: "119d" is 119 days, below the floor of 120 days for batch_ids (docs/retention.md)',
      ),
    );
    expect(() => loadConfig({ ...base, RETENTION_RAW_BODIES: '7d', RETENTION_OUTBOX: '1h' })).toThrow(
      new Error(
        'Invalid configuration:\n' +
          '  - RETENTION_RAW_BODIES: "7d" is 7 days, below the floor of 30 days for raw_bodies (docs/retention.md)\n' +
          '  - RETENTION_OUTBOX: "1h" is 0.04 days, below the floor of 30 days for outbox (docs/retention.md)',
      ),
    );
    for (const variable of ['RETENTION_SNAPSHOTS', 'RETENTION_DELIVERY_ATTEMPTS'])
      expect(() => loadConfig({ ...base, [variable]: '29d' })).toThrow(
        `${variable}: "29d" is 29 days, below the floor of 30 days`,
      );
  });

  // Issue 38, item 9: `RETENTION_BATCH_IDS=90` was read as 90 milliseconds and refused as "0 days".
  it('reads a bare number as days, the unit the variables are documented in', () => {
    expect(() => loadConfig({ ...base, RETENTION_BATCH_IDS: '90' })).toThrow(
      new Error(
        'Invalid configuration:\n  - RETENTION_BATCH_IDS: "90" is 90 days (a bare number is days), below the floor of 120 days for batch_ids (docs/retention.md)',
      ),
    );
    const r = loadConfig({
      ...base,
      RETENTION_BATCH_IDS: '400',
      RETENTION_RAW_BODIES: ' 30.5 ',
      RETENTION_SNAPSHOTS: '0',
      RETENTION_OUTBOX: '34560000000ms',
    }).retention;
    expect(r.keepMs).toEqual({
      batch_ids: 400 * DAY,
      raw_bodies: 30.5 * DAY,
      snapshots: null,
      delivery_attempts: 400 * DAY,
      outbox: 400 * DAY,
    });
  });

  it.each([
    [
      'soon',
      '"soon" is not a period: days as a bare number ("400"), a number with a unit ("400d", "90 days", "2160h"), or "off"',
    ],
    [
      '-5d',
      '"-5d" is not a period: days as a bare number ("400"), a number with a unit ("400d", "90 days", "2160h"), or "off"',
    ],
    [
      '34560000000',
      '"34560000000" would be 34560000000 days (a bare number is days): write milliseconds with their unit ("34560000000ms") or days ("400d")',
    ],
  ])('refuses RETENTION_SNAPSHOTS=%s naming the units', (value, message) => {
    expect(() => loadConfig({ ...base, RETENTION_SNAPSHOTS: value })).toThrow(
      new Error(`Invalid configuration:\n  - RETENTION_SNAPSHOTS: ${message}`),
    );
  });

  it('archives named classes, to a folder the directory connector needs', () => {
    expect(() => loadConfig({ ...base, RETENTION_ARCHIVE: 'snapshots' })).toThrow(
      'RETENTION_ARCHIVE_DIR: required to archive with the directory connector',
    );
    expect(() => loadConfig({ ...base, RETENTION_ARCHIVE: 'ledger' })).toThrow(/RETENTION_ARCHIVE/);
    const r = loadConfig({
      ...base,
      RETENTION_ARCHIVE: 'snapshots,delivery_attempts',
      RETENTION_ARCHIVE_DIR: '/a',
    }).retention;
    expect(r.archiveClasses).toEqual(['snapshots', 'delivery_attempts']);
    expect(r.archiveDir).toBe('/a');
  });
});
