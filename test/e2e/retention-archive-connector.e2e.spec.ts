import { Injectable, Module } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { ArchiveConnector } from '../../src/extensions.js';
import {
  ensurePartitions,
  monthStart,
  partitionName,
} from '../../src/operations/retention/retention-partitions.js';
import { RetentionJob } from '../../src/operations/retention/retention.job.js';
import { createTestApp, useTestApp } from '../support/test-app.js';

// Issue 32 (docs/retention.md, "Archiving before drop"; docs/extending.md): a bookmaker's module
// provides an ArchiveConnector, found at start like a wallet connector and chosen by
// RETENTION_ARCHIVE_CONNECTOR; the job stores each expiring partition through it before the drop.

/** Keeps every object in memory (a bookmaker's object store). */
@Injectable()
class MemoryArchiveConnector extends ArchiveConnector {
  readonly name = 'memory';
  readonly objects = new Map<string, Buffer>();

  async put(key: string, body: Readable): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    this.objects.set(key, Buffer.concat(chunks));
  }
}

@Module({ providers: [MemoryArchiveConnector], exports: [MemoryArchiveConnector] })
class ArchiveModule {}

const DAY = 86_400_000;

describe('an ArchiveConnector of a module', () => {
  const t = useTestApp(
    { RETENTION_ARCHIVE: 'delivery_attempts', RETENTION_ARCHIVE_CONNECTOR: 'memory' },
    { extensions: [ArchiveModule] },
  );

  it('stores each expiring partition (rows and manifest) before the job drops it', async () => {
    const old = new Date(Date.now() - 450 * DAY);
    const c = await t.db.connect();
    try {
      await ensurePartitions(c, new Date(), 3, old);
      await c.query(
        `INSERT INTO delivery_attempts (batch_id, received_at, outcome, http_status, duration_ms)
         SELECT 'x' || g, $1, 'processed', 200, g FROM generate_series(1, 7) g`,
        [old],
      );
    } finally {
      c.release();
    }
    const run = await t.app.get(RetentionJob).runOnce();
    expect(run.skipped).toBe(false);
    const connector = t.app.get(MemoryArchiveConnector);
    const name = partitionName('delivery_attempts', monthStart(old));
    const manifest = JSON.parse(connector.objects.get(`${name}/manifest.json`)!.toString()) as {
      rows: number;
    };
    expect(manifest.rows).toBe(7);
    expect(connector.objects.get(`${name}/rows.jsonl.gz`)!.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM delivery_attempts`);
    expect(rows[0].n).toBe(0);
  });

  it('a name no connector has stops the start naming the variable', async () => {
    await expect(
      createTestApp({ RETENTION_ARCHIVE: 'snapshots', RETENTION_ARCHIVE_CONNECTOR: 's3' }),
    ).rejects.toThrow("RETENTION_ARCHIVE_CONNECTOR: no connector 's3' (known: directory)");
  });
});
