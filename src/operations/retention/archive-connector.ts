import type { Readable } from 'node:stream';

/**
 * Where the retention job sends an archive before it drops what the archive holds (docs/retention.md,
 * "Archiving"; docs/extending.md): the shipped `directory` connector writes files under
 * `RETENTION_ARCHIVE_DIR`; a bookmaker's module provides a subclass (e.g. to its object store),
 * found at start like a wallet connector and chosen by `RETENTION_ARCHIVE_CONNECTOR=<name>`.
 *
 * An archive is two objects under one prefix (the partition's name, or `callback_batches.payload-<time>`):
 * `rows.jsonl.gz` (gzip of one JSON object per line) and then `manifest.json` (table, partition,
 * bounds, row count, SHA-256 of `rows.jsonl.gz`). The partition is dropped only after both `put`
 * calls resolved: resolve only once the object is durable; throw to keep the data (the run fails
 * and tries again next time).
 */
export abstract class ArchiveConnector {
  /** Lower-case name, e.g. `s3`, chosen by `RETENTION_ARCHIVE_CONNECTOR`. */
  abstract readonly name: string;

  /** Stores `body` (read it to its end) under `key` (`<prefix>/rows.jsonl.gz`, `<prefix>/manifest.json`). */
  abstract put(key: string, body: Readable): Promise<void>;
}

/** The manifest of one archive (`manifest.json`). */
export interface ArchiveManifest {
  /** Format version. */
  version: 1;
  dataClass: string;
  table: string;
  /** The partition, or `callback_batches.payload` for raw bodies. */
  source: string;
  /** Bounds of the rows' time (ISO-8601; `from` null: from the oldest). */
  from: string | null;
  to: string;
  /** Lines of `rows.jsonl.gz`. */
  rows: number;
  /** SHA-256 (hex) of the bytes of `rows.jsonl.gz` as stored. */
  sha256: string;
  /** The file holding the rows, next to the manifest. */
  file: 'rows.jsonl.gz';
  createdAt: string;
}
