import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { EmbeddedPostgresError, runningServer, USER } from './embedded-postgres-process.js';
import type { MinimalLogger } from './embedded-postgres-process.js';

// The embedded PostgreSQL as root (docs/operating.md, "As root"): the server runs as the
// `postgres` system user from a verified copy of the binaries, and a data folder that user cannot
// reach inside a checkout's `.data` is a link to a cluster of its own under the clusters folder.
// No permission of the host is changed. Loaded by the tests' global set-up too (see
// embedded-postgres.ts): Node's modules, packages and the launcher's own files only.

/** Where, as root, the clusters of data folders the postgres user cannot reach are kept by default. */
export const DEFAULT_CLUSTERS_DIR = '/var/lib/settlement-receiver';

/** Written beside a cluster under the clusters folder: the link (in a checkout's `.data`) it belongs to. */
const CLUSTER_FILE = 'cluster.json';
/** Names of the clusters' folders under the clusters folder (random, see {@link DataFolderLocator.locate}). */
const CLUSTER_ID = /^[0-9a-f]{16}$/;

/**
 * The first folder above `path` (symbolic links resolved, from the nearest existing one up to
 * `/`) that others may not enter (no execute bit for others), or undefined when the postgres
 * user can reach `path`'s folder.
 */
function privateFolderAbove(path: string): string | undefined {
  let existing = dirname(path);
  while (!existsSync(existing)) existing = dirname(existing);
  for (let d = realpathSync(existing); ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return d;
    if (dirname(d) === d) return undefined;
  }
}

/** The target of the symbolic link `path`, or undefined when `path` is missing or no link. */
function linkTarget(path: string): string | undefined {
  try {
    return lstatSync(path).isSymbolicLink() ? resolve(dirname(path), readlinkSync(path)) : undefined;
  } catch {
    return undefined;
  }
}

/** What a cluster under the clusters folder records about itself ({@link CLUSTER_FILE}). */
interface ClusterRecord {
  /** The link in a checkout's `.data` folder that points at this cluster's data folder. */
  link: string;
  /** The checkout (the folder holding that `.data`). */
  checkout: string;
  created: string;
}

/** The record of the cluster in `folder`, or undefined when it has none (not made by this launcher). */
function readRecord(folder: string): ClusterRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(join(folder, CLUSTER_FILE), 'utf8')) as Partial<ClusterRecord>;
    return typeof record.link === 'string' && typeof record.checkout === 'string'
      ? (record as ClusterRecord)
      : undefined;
  } catch {
    return undefined;
  }
}

/** `path` with the symbolic links of its nearest existing folder (or itself) resolved. */
function realPathOf(path: string): string {
  let existing = path;
  while (!existsSync(existing)) existing = dirname(existing);
  return join(realpathSync(existing), relative(existing, path));
}

/** One entry of a distribution folder, as compared between the package and its copy. */
type Entry = [path: string, kind: 'dir' | 'file' | 'link', size: number, mode: number, target: string];

/**
 * Every entry under `root` with the mode the copy must have: folders 755, executables 755, other
 * files 644 (readable and executable by the `postgres` user, writable by the owner only).
 */
function listing(root: string): Entry[] {
  const out: Entry[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const rel = relative(root, path);
      const st = lstatSync(path);
      if (st.isSymbolicLink()) out.push([rel, 'link', 0, 0, readlinkSync(path)]);
      else if (st.isDirectory()) {
        out.push([rel, 'dir', 0, 0o755, '']);
        walk(path);
      } else out.push([rel, 'file', st.size, st.mode & 0o111 ? 0o755 : 0o644, '']);
    }
  };
  walk(root);
  return out;
}

/**
 * Whether `copy` is a complete copy of `source` that nobody but root can have changed: the folder
 * and every entry owned by root, nothing writable by group or others, the same entries, sizes and
 * symbolic links as the package.
 */
function isTrustedCopy(copy: string, source: string): boolean {
  try {
    const top = lstatSync(copy);
    if (!top.isDirectory() || top.uid !== 0 || (top.mode & 0o777) !== 0o755) return false;
    const expected = listing(source);
    const actual: Entry[] = [];
    for (const entry of listing(copy)) {
      const st = lstatSync(join(copy, entry[0]));
      if (st.uid !== 0) return false;
      if (!st.isSymbolicLink() && (st.mode & 0o777) !== entry[3]) return false;
      actual.push(entry);
    }
    return JSON.stringify(actual) === JSON.stringify(expected);
  } catch {
    return false;
  }
}

/**
 * As root the server runs as the `postgres` user, which must read and execute the distribution:
 * it is run from a copy under the system temp folder, one per package version
 * (`settlement-receiver-postgres-<platform>-<version>`), made once, owned by root and writable by
 * nobody else, and checked before every reuse ({@link isTrustedCopy}; an untrusted one is
 * replaced). The copy is written to a private folder and renamed into place, so a half-written
 * copy is never used and concurrent starts agree. docs/operating.md ("As root") has the reasoning.
 * @returns the folder to run PostgreSQL from.
 */
export function trustedCopyOf(source: string, version: string): string {
  if (privateFolderAbove(join(tmpdir(), 'x')))
    throw new EmbeddedPostgresError(
      `the postgres user cannot enter the temp folder ${tmpdir()}; set TMPDIR to a folder it can reach`,
    );
  const final = resolve(tmpdir(), `settlement-receiver-postgres-${platform()}-${arch()}-${version}`);
  if (isTrustedCopy(final, source)) return final;
  const staging = mkdtempSync(`${final}.tmp-`);
  try {
    cpSync(source, staging, { recursive: true, verbatimSymlinks: true });
    for (const [path, kind, , mode] of listing(source)) {
      if (kind !== 'link') chmodSync(join(staging, path), mode);
    }
    chmodSync(staging, 0o755);
    try {
      renameSync(staging, final);
    } catch {
      // Another start renamed its copy first, or an untrusted folder holds the name.
      if (isTrustedCopy(final, source)) return final;
      rmSync(final, { recursive: true, force: true });
      renameSync(staging, final);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  if (!isTrustedCopy(final, source))
    throw new EmbeddedPostgresError(`the copy of the PostgreSQL binaries in ${final} could not be verified`);
  return final;
}

/** uid and gid of the `postgres` system user, created (group and user) when missing. */
export function postgresUser(): { uid: number; gid: number } {
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', USER], { encoding: 'utf8', stdio: 'pipe' })),
    gid: Number(execFileSync('id', ['-g', USER], { encoding: 'utf8', stdio: 'pipe' })),
  });
  try {
    return ids();
  } catch {
    try {
      execFileSync('groupadd', ['-f', USER], { stdio: 'pipe' });
      execFileSync('useradd', ['-g', USER, USER], { stdio: 'pipe' });
      return ids();
    } catch (err) {
      throw new EmbeddedPostgresError(
        `PostgreSQL does not run as root and the postgres system user could not be created (${(err as Error).message.split('\n')[0]}); run as another user or set DATABASE_URL`,
        { cause: err },
      );
    }
  }
}

/**
 * Where the data folder of a server lives ({@link locate}): the requested folder, or as root a
 * cluster under the clusters folder that it links to.
 */
export class DataFolderLocator {
  /**
   * @param requested the requested data folder, absolute.
   * @param checkout the checkout folder, absolute.
   * @param clustersDir the folder of the clusters (`EMBEDDED_PG_CLUSTERS_DIR`); default {@link DEFAULT_CLUSTERS_DIR}.
   */
  constructor(
    private readonly requested: string,
    private readonly checkout: string,
    private readonly clustersDir: string | undefined,
    private readonly logger: MinimalLogger,
  ) {}

  /**
   * The data folder to run on. Not root, or when the `postgres` user can reach the requested
   * folder (symbolic links followed): that folder. As root when it cannot (a checkout under
   * `/root`, mode 700) and the folder lies inside the checkout's `.data`: the requested path is a
   * symbolic link to `<clusters folder>/<random id>/postgres`, a cluster of its own, made here
   * when `create` (else undefined is returned), so a new checkout, or one whose link or `.data`
   * was deleted, starts on a new database kept outside the temp folder. Starting on such a
   * cluster removes the clusters of links that are gone ({@link removeStaleClusters}). No
   * permission of the host is changed; docs/operating.md ("As root") has the reasoning.
   * @throws EmbeddedPostgresError for an unreachable folder elsewhere, or one that holds files.
   */
  locate(create: boolean): string | undefined {
    const requested = this.requested;
    if (userInfo().uid !== 0) return requested;
    const clusters = resolve(this.clustersDir ?? DEFAULT_CLUSTERS_DIR);
    const target = linkTarget(requested);
    const id =
      target && dirname(dirname(target)) === clusters && basename(target) === 'postgres'
        ? basename(dirname(target))
        : undefined;
    if (id && CLUSTER_ID.test(id)) return create ? this.useCluster(clusters, id, requested) : target;
    if (target && !existsSync(target))
      throw new EmbeddedPostgresError(
        `the embedded PostgreSQL data folder ${requested} links to ${target}, which is missing; restore it, or remove the link to start on a new database`,
      );
    const real = realPathOf(requested);
    const closed = privateFolderAbove(real);
    if (!closed) return real;
    const checkout = this.checkout;
    const holds =
      existsSync(requested) && !(statSync(requested).isDirectory() && !readdirSync(requested).length);
    if (!requested.startsWith(join(checkout, '.data') + sep) || holds) {
      throw new EmbeddedPostgresError(
        `the postgres user (PostgreSQL's user as root) cannot reach the data folder ${requested} (${closed} is private)` +
          (holds
            ? '; it holds files: move them to a folder that user can reach and set EMBEDDED_PG_DATA_DIR there, or remove it to start on a new database'
            : `; set EMBEDDED_PG_DATA_DIR to a folder it can reach, or to one inside ${join(checkout, '.data')}`),
      );
    }
    if (!create) return undefined;
    if (existsSync(requested)) rmdirSync(requested);
    const newId = randomBytes(8).toString('hex');
    const dataDir = join(clusters, newId, 'postgres');
    this.clustersFolder(clusters);
    mkdirSync(dirname(requested), { recursive: true });
    try {
      symlinkSync(dataDir, requested);
    } catch (err) {
      // Another start of this checkout made the link first: use its cluster.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return this.locate(true);
      throw err;
    }
    this.logger.warn(
      `the postgres user cannot reach ${requested} (${closed} is private): its cluster is kept in ${dataDir}, ` +
        `and ${requested} links there (delete the link, or ${join(checkout, '.data')}, to start on a new database)`,
    );
    const hash = createHash('sha256').update(requested).digest('hex').slice(0, 12);
    const earlier = resolve(tmpdir(), `settlement-receiver-${hash}`, 'postgres');
    if (existsSync(join(earlier, 'PG_VERSION')))
      this.logger.warn(
        `${earlier} holds a cluster an earlier version kept for this path (perhaps of an earlier checkout here); ` +
          `it is not used: to keep using it, stop the receiver and replace ${dataDir} with it, else remove it`,
      );
    return this.useCluster(clusters, newId, requested);
  }

  /**
   * The data folder of the cluster `id` under `clusters`, which `link` points at: its folder and
   * record are made when missing (a new cluster, or one deleted by hand) and the record follows a
   * checkout that moved; then the clusters of other links that are gone are removed.
   */
  private useCluster(clusters: string, id: string, link: string): string {
    this.clustersFolder(clusters);
    const folder = join(clusters, id);
    const checkout = this.checkout;
    if (!existsSync(folder)) mkdirSync(folder);
    chmodSync(folder, 0o755);
    const record = readRecord(folder);
    if (record?.link !== link || record.checkout !== checkout) {
      if (record) this.logger.log(`${folder} now belongs to ${link} (it was ${record.link})`);
      const next: ClusterRecord = { link, checkout, created: record?.created ?? new Date().toISOString() };
      writeFileSync(join(folder, CLUSTER_FILE), `${JSON.stringify(next, null, 2)}\n`, { mode: 0o644 });
    }
    this.removeStaleClusters(clusters, id);
    return join(folder, 'postgres');
  }

  /**
   * Makes sure `dir`, the folder of the clusters, exists, belongs to root, is writable by root
   * only (its clusters are removed from here as root) and can be entered by the postgres user.
   */
  private clustersFolder(dir: string): void {
    if (mkdirSync(dir, { recursive: true })) chmodSync(dir, 0o755);
    const st = lstatSync(dir);
    if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0)
      throw new EmbeddedPostgresError(
        `the embedded clusters folder ${dir} must be a folder of root that nobody else can write; fix it or set EMBEDDED_PG_CLUSTERS_DIR`,
      );
    const closed = privateFolderAbove(join(dir, 'x'));
    if (closed)
      throw new EmbeddedPostgresError(
        `the postgres user cannot reach the embedded clusters folder ${dir} (${closed} is private); set EMBEDDED_PG_CLUSTERS_DIR to a folder it can reach`,
      );
  }

  /**
   * Removes each cluster under `clusters` (but `current`) whose link is gone while its checkout
   * is still there (the link or `.data` was deleted, or another checkout replaced it) and whose
   * server is not running. One whose checkout is gone as a whole is only reported: the checkout
   * may have moved, and starting it takes its cluster back.
   */
  private removeStaleClusters(clusters: string, current: string): void {
    for (const id of readdirSync(clusters)) {
      const folder = join(clusters, id);
      const record = CLUSTER_ID.test(id) && id !== current ? readRecord(folder) : undefined;
      // A symbolic link here is not a cluster this launcher made (and rm would not follow it).
      if (!record || linkTarget(folder)) continue;
      const dataDir = join(folder, 'postgres');
      if (linkTarget(record.link) === dataDir || runningServer(dataDir)) continue;
      if (!existsSync(record.checkout)) {
        this.logger.warn(
          `the embedded cluster ${folder} belongs to ${record.link}, whose checkout is gone: if it moved, start it once to take the cluster back; else remove ${folder}`,
        );
        continue;
      }
      rmSync(folder, { recursive: true, force: true });
      this.logger.warn(
        `removed the embedded cluster ${folder}: ${record.link} no longer links to it (${record.checkout} was reset or replaced)`,
      );
    }
  }
}
