/* global process, console, setTimeout, clearTimeout, URL */
// PgBouncer (Debian's `pgbouncer` package, 1.18) in front of a PostgreSQL server, for the tests,
// .ci/run and the balancer harness: transaction pooling, `default_pool_size = 2` unless told, so
// unrelated clients share server connections and anything a session keeps shows up in another
// client (docs/production.md#pgbouncer). Plain JavaScript so bash can run it as well as the tests:
//
//   import { startPgBouncer } from '../support/pgbouncer.mjs';
//   const bouncer = await startPgBouncer({ port: 6440, upstream: 'postgres://postgres@127.0.0.1:5432' });
//   bouncer.url('mydb'); // postgres://postgres@127.0.0.1:6440/mydb
//   await bouncer.stop();
//
//   node test/support/pgbouncer.mjs --port 6440 --upstream postgres://postgres@127.0.0.1:5432 [--pool-size 2]
//     prints `pgbouncer ready postgres://postgres@127.0.0.1:6440` and runs until SIGTERM/SIGINT.
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The `postgres` system user's uid and gid (PgBouncer refuses to run as root), from /etc/passwd. */
function postgresUser() {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('PgBouncer refuses to run as root and there is no postgres user');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

function portAnswers(port) {
  return new Promise((ok) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      ok(true);
    });
    socket.on('error', () => ok(false));
  });
}

/**
 * Starts PgBouncer on 127.0.0.1:`port` with every database (`*`) of the server at `upstream`
 * (a postgres:// URL; its user is the one PgBouncer logs in as, trust authentication, no password).
 * @param {{ port: number, upstream: string, poolSize?: number, poolMode?: string, maxClientConn?: number }} options
 *   poolSize: `default_pool_size` (2); poolMode: `pool_mode` (`transaction`); maxClientConn (2000).
 * @returns {Promise<{ port: number, url: (database?: string) => string, log: () => string, stop: () => Promise<void> }>}
 *   `url(db)`: the same user and database through PgBouncer; `log()`: its log so far.
 * @throws Error with the end of PgBouncer's log when it does not answer within 10 s.
 */
export async function startPgBouncer({
  port,
  upstream,
  poolSize = 2,
  poolMode = 'transaction',
  maxClientConn = 2000,
}) {
  const server = new URL(upstream);
  const user = decodeURIComponent(server.username || 'postgres');
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  const asRoot = userInfo().uid === 0;
  const config = join(dir, 'pgbouncer.ini');
  const logFile = join(dir, 'pgbouncer.log');
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`);
  writeFileSync(
    config,
    [
      '[databases]',
      // The upstream's password, when it has one (the embedded PostgreSQL of the reliability suite).
      `* = host=${server.hostname} port=${server.port || 5432} user=${user}${server.password ? ` password=${decodeURIComponent(server.password)}` : ''}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      "unix_socket_dir = ''",
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `admin_users = ${user}`,
      `pool_mode = ${poolMode}`,
      `default_pool_size = ${poolSize}`,
      'min_pool_size = 0',
      'reserve_pool_size = 0',
      `max_client_conn = ${maxClientConn}`,
      `max_db_connections = 0`,
      // Nothing is reset between clients in transaction mode (the default): a leak is seen.
      'server_reset_query_always = 0',
      // No `ignore_startup_parameters`: a client sending `options` is refused, as in production.
      `logfile = ${logFile}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  writeFileSync(logFile, '');
  if (asRoot) {
    const { uid, gid } = postgresUser();
    chmodSync(dir, 0o700);
    for (const f of ['', 'pgbouncer.ini', 'userlist.txt', 'pgbouncer.log']) chownSync(join(dir, f), uid, gid);
  }
  const child = spawn('pgbouncer', [...(asRoot ? ['-u', 'postgres'] : []), config], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  let exited = false;
  const gone = new Promise((ok) =>
    child.on('exit', () => {
      exited = true;
      ok(undefined);
    }),
  );
  child.on('error', (err) => {
    stderr += `${err.message}\n`;
    exited = true;
  });
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8') + stderr;
    } catch {
      return stderr;
    }
  };
  const stop = async () => {
    if (!exited) {
      child.kill('SIGTERM'); // immediate shutdown (SIGINT waits for clients)
      let timer;
      await Promise.race([gone, new Promise((ok) => (timer = setTimeout(ok, 5000)))]);
      clearTimeout(timer);
      if (!exited) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100 && !exited; i++) {
    if (await portAnswers(port)) {
      return {
        port,
        url: (database = decodeURIComponent(server.pathname.slice(1)) || 'postgres') => {
          const u = new URL(upstream);
          u.hostname = '127.0.0.1';
          u.port = String(port);
          u.pathname = `/${database}`;
          return u.toString();
        },
        log,
        stop,
      };
    }
    await new Promise((ok) => setTimeout(ok, 100));
  }
  const tail = log().split('\n').slice(-15).join('\n');
  await stop();
  throw new Error(`PgBouncer did not answer on 127.0.0.1:${port}:\n${tail}`);
}

// As a command: start it, print one line, stop it on SIGTERM/SIGINT.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = Object.fromEntries(
    process.argv
      .slice(2)
      .join(' ')
      .split(/\s*--/)
      .filter(Boolean)
      .map((a) => a.split(/\s+/)),
  );
  if (!args.port || !args.upstream) {
    console.error(
      'usage: node test/support/pgbouncer.mjs --port N --upstream postgres://user@host:port [--pool-size 2] [--pool-mode transaction]',
    );
    process.exit(2);
  }
  startPgBouncer({
    port: Number(args.port),
    upstream: args.upstream,
    poolSize: args['pool-size'] ? Number(args['pool-size']) : undefined,
    poolMode: args['pool-mode'],
  }).then(
    (bouncer) => {
      process.stdout.write(`pgbouncer ready ${bouncer.url('').replace(/\/$/, '')}\n`);
      const end = () => bouncer.stop().then(() => process.exit(0));
      process.on('SIGTERM', end);
      process.on('SIGINT', end);
    },
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
