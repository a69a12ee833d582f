import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// Issue 39 (docs/production.md#pgbouncer): the pooled path (DATABASE_URL through PgBouncer in
// transaction mode) keeps no session state. Whatever needs a session runs on the server itself
// (DATABASE_DIRECT_URL: SessionDatabase, the migrations' own pool, the command-line tools); this
// check of src fails when a session setting, a session advisory lock, a startup option, a prepared
// statement named outside Tx, or LISTEN appears anywhere else. test/e2e/pgbouncer-leaks.e2e.spec.ts
// checks the same at run time through PgBouncer.

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * Files whose SQL runs on a session of the server itself, never through the pooler: why each may
 * set session settings and hold session advisory locks.
 */
const SESSION_FILES: Record<string, string> = {
  'src/platform/database/migrator.ts':
    "migrations: their own pool on DATABASE_DIRECT_URL (database.module.ts) or a CLI's",
  'src/operations/retention/retention.job.ts':
    "SessionDatabase's connection (DATABASE_DIRECT_URL when pooled)",
  'src/operations/retention/retention-engine.ts': "the retention job's or CLI's session connection",
  'src/operations/retention/retention-partitions.ts': "the retention job's or CLI's session connection",
  'src/operations/retention/retention-cli.ts': 'a command-line tool: DATABASE_DIRECT_URL (cli-database.ts)',
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const files = sources(join(ROOT, 'src')).map((f) => ({
  path: relative(ROOT, f),
  text: readFileSync(f, 'utf8'),
}));

/** `path:line: text` of each match of `pattern` in the files not exempted. */
function offenders(pattern: RegExp, exempt: (path: string) => boolean = () => false): string[] {
  return files
    .filter((f) => !exempt(f.path))
    .flatMap((f) =>
      f.text.split('\n').flatMap((line, i) =>
        // Comments only tell: code and SQL are what run.
        !/^\s*(\*|\/\/|\/\*)/.test(line) && pattern.test(line) ? [`${f.path}:${i + 1}: ${line.trim()}`] : [],
      ),
    );
}

describe('the pooled path keeps no session state (issue 39)', () => {
  it('sends no startup options (-c settings at connection start)', () => {
    expect(offenders(/['"`]\s*-c\s+\w+\s*=/)).toEqual([]);
    expect(offenders(/\boptions:\s*\[?\s*['"`]/, (p) => !p.startsWith('src/platform/database/'))).toEqual([]);
  });

  it('sets settings for a session (SET/RESET without LOCAL, set_config(…, false)) only on a session of the server', () => {
    // SQL is written in capitals here ("set EMBEDDED_PG_PORT" in a message is no statement).
    const sessionSet = /['"`]\s*(SET\s+(?!LOCAL\b|TRANSACTION\b|CONSTRAINTS\b)\w+|RESET\s+\w+)/;
    expect(offenders(sessionSet, (p) => p in SESSION_FILES)).toEqual([]);
    expect(offenders(/set_config\([^)]*,\s*false\s*\)/i)).toEqual([]);
  });

  it('holds session advisory locks only on a session of the server (SessionDatabase in transaction.ts)', () => {
    const sessionLock = /pg_(try_)?advisory_(lock|unlock)(_shared)?\s*\(/;
    expect(
      offenders(sessionLock, (p) => p in SESSION_FILES || p === 'src/platform/database/transaction.ts'),
    ).toEqual([]);
    // TransactionRunner.withSessionLock: on the SessionDatabase's connection, not the app's pool.
    const tx = files.find((f) => f.path === 'src/platform/database/transaction.ts')!.text;
    const body = tx.slice(tx.indexOf('async withSessionLock'), tx.indexOf('private async once'));
    expect(body).toContain('this.session.dataSource.createQueryRunner()');
    expect(body).not.toContain('this.dataSource');
  });

  it('names prepared statements only through Tx, which leaves the names out when pooled', () => {
    const rawNamed = /\.query\(\s*\{[^}]*\bname\s*:/s;
    const named = files.filter(
      (f) => f.path !== 'src/platform/database/transaction.ts' && rawNamed.test(f.text),
    );
    expect(named.map((f) => f.path)).toEqual([]);
    const tx = files.find((f) => f.path === 'src/platform/database/transaction.ts')!.text;
    expect(tx).toContain('name: this.limits.namedStatements ? prepared : undefined');
  });

  it('uses no LISTEN (it would need a session)', () => {
    expect(offenders(/['"`]\s*(UN)?LISTEN\s/i)).toEqual([]);
  });

  it('knows every session file it exempts', () => {
    for (const path of Object.keys(SESSION_FILES)) expect(files.some((f) => f.path === path)).toBe(true);
  });
});
