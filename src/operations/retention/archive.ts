import type { SqlQueryable } from '../../platform/database/sql-queryable.js';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { createInterface } from 'node:readline';
import { ArchiveConnector } from './archive-connector.js';
import type { ArchiveManifest } from './archive-connector.js';
import type { RetentionArchiver } from './retention-engine.js';
import type { PartitionInfo } from './retention-partitions.js';

/** Rows read per statement while archiving a partition (keyset pages by id). */
const PAGE_ROWS = 5000;

/**
 * The shipped archive connector: writes each object to `<dir>/<key>` (through a temporary file
 * renamed into place once complete, so a file present is whole).
 */
export class DirectoryArchiveConnector extends ArchiveConnector {
  readonly name = 'directory';

  constructor(private readonly dir: string) {
    super();
  }

  async put(key: string, body: Readable): Promise<void> {
    const path = join(this.dir, key);
    await mkdir(dirname(path), { recursive: true });
    const partial = `${path}.partial`;
    await pipeline(body, createWriteStream(partial));
    await rename(partial, path);
  }
}

/** Writes `lines` (JSON text each) as one archive under `prefix`, then its manifest. */
export async function writeArchive(
  connector: ArchiveConnector,
  prefix: string,
  lines: AsyncIterable<string>,
  meta: Pick<ArchiveManifest, 'dataClass' | 'table' | 'source' | 'from' | 'to'>,
): Promise<ArchiveManifest> {
  const hash = createHash('sha256');
  let rows = 0;
  const source = Readable.from(
    (async function* () {
      for await (const line of lines) {
        rows++;
        yield `${line}\n`;
      }
    })(),
  );
  // Hashes the bytes on their way to the connector; buffered (paused) until the connector reads.
  const hashed = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  const gzip = createGzip();
  await Promise.all([
    pipeline(source, gzip, hashed).catch((err: unknown) => {
      hashed.destroy(err as Error);
      throw err;
    }),
    connector.put(`${prefix}/rows.jsonl.gz`, hashed),
  ]);
  const manifest: ArchiveManifest = {
    version: 1,
    ...meta,
    rows,
    sha256: hash.digest('hex'),
    file: 'rows.jsonl.gz',
    createdAt: new Date().toISOString(),
  };
  await connector.put(
    `${prefix}/manifest.json`,
    Readable.from([Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`)]),
  );
  return manifest;
}

/** Every row of `partition` as `row_to_json` text, by ascending id, a page at a time. */
async function* partitionLines(db: SqlQueryable, partition: PartitionInfo): AsyncIterable<string> {
  let after: string | null = null;
  for (;;) {
    const { rows }: { rows: { id: string; line: string }[] } = await db.query<{ id: string; line: string }>(
      `SELECT t.id::text AS id, row_to_json(t)::text AS line FROM "${partition.name}" t
        WHERE $1::bigint IS NULL OR t.id > $1::bigint ORDER BY t.id LIMIT ${PAGE_ROWS}`,
      [after],
    );
    for (const r of rows) yield r.line;
    if (rows.length < PAGE_ROWS) return;
    after = rows[rows.length - 1].id;
  }
}

/** Archives an expiring partition under its name (what the engine calls before dropping it). */
export async function archivePartition(
  connector: ArchiveConnector,
  db: SqlQueryable,
  partition: PartitionInfo,
  dataClass: string,
): Promise<ArchiveManifest> {
  return writeArchive(connector, partition.name, partitionLines(db, partition), {
    dataClass,
    table: partition.table,
    source: partition.name,
    from: partition.from?.toISOString() ?? null,
    to: partition.to.toISOString(),
  });
}

/** What `npm run retention -- --verify-archive DIR` found for one archive. */
export interface ArchiveCheck {
  manifest: string;
  ok: boolean;
  rows: number;
  problems: string[];
  /** Raw bodies whose SHA-256 equals the stored payload hash (callback_batches archives). */
  bodiesVerified: number;
}

/**
 * Checks every archive under `dir` (each `manifest.json`): the file's SHA-256 is the manifest's,
 * it has the manifest's number of lines, each a JSON object; a raw body (`payload`, bytea as
 * `\x…` hex) hashes to its row's `payload_hash`.
 */
export async function verifyArchives(dir: string): Promise<ArchiveCheck[]> {
  const checks: ArchiveCheck[] = [];
  for (const manifestPath of await findManifests(dir)) {
    const problems: string[] = [];
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as ArchiveManifest;
    const file = join(dirname(manifestPath), manifest.file);
    const hash = createHash('sha256');
    let rows = 0;
    let bodiesVerified = 0;
    try {
      const raw = createReadStream(file);
      raw.on('data', (chunk) => hash.update(chunk));
      const lines = createInterface({ input: raw.pipe(createGunzip()), crlfDelay: Infinity });
      for await (const line of lines) {
        rows++;
        let row: Record<string, unknown>;
        try {
          row = JSON.parse(line) as Record<string, unknown>;
        } catch {
          problems.push(`line ${rows} is not JSON`);
          continue;
        }
        if (typeof row.payload === 'string' && typeof row.payload_hash === 'string') {
          const body = Buffer.from(row.payload.replace(/^\\x/, ''), 'hex');
          if (createHash('sha256').update(body).digest('hex') === row.payload_hash.trim()) bodiesVerified++;
          else
            problems.push(
              `line ${rows}: the body of batch ${String(row.batch_id)} does not hash to its payload_hash`,
            );
        }
      }
    } catch (err) {
      problems.push(`${relative(dir, file)}: ${(err as Error).message}`);
    }
    const sha256 = hash.digest('hex');
    if (sha256 !== manifest.sha256) problems.push(`SHA-256 ${sha256}, the manifest says ${manifest.sha256}`);
    if (rows !== manifest.rows) problems.push(`${rows} rows, the manifest says ${manifest.rows}`);
    checks.push({
      manifest: relative(dir, manifestPath),
      ok: problems.length === 0,
      rows,
      problems,
      bodiesVerified,
    });
  }
  return checks;
}

async function findManifests(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await findManifests(path)));
    else if (entry.name === 'manifest.json') found.push(path);
  }
  return found.sort();
}

/** The engine's archiver over `connector`: partitions under their name, row batches under `<target>-<time>-<n>`. */
export function archiverOf(connector: ArchiveConnector): RetentionArchiver {
  let batch = 0;
  return {
    partition: async (db, partition, dataClass) => {
      await archivePartition(connector, db, partition, dataClass);
    },
    rows: async (target, lines, cutoff) => {
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      await writeArchive(
        connector,
        `${target.name}-${stamp}-${++batch}`,
        (async function* () {
          yield* lines;
        })(),
        {
          dataClass: target.dataClass,
          table: target.table,
          source: target.name,
          from: null,
          to: cutoff.toISOString(),
        },
      );
    },
  };
}
