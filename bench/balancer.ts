/**
 * HAProxy and nginx from Debian's packages in front of receiver replicas, run from the shipped
 * configurations `ops/haproxy.cfg` and `ops/nginx.conf` with only their addresses rewritten
 * (docs/production.md, "Replicas behind a load balancer"): the harness of `npm run bench:topology`
 * and test/reliability/topology.spec.ts. Linux, the binaries on PATH (`haproxy`, `nginx`).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { resolve } from 'node:path';

export type BalancerKind = 'haproxy' | 'nginx';

/** Where a balancer listens and which replicas it balances over (all on 127.0.0.1). */
export interface BalancerOptions {
  /** The clients' port. */
  port: number;
  /** HAProxy's statistics page (`/stats;csv`); unused by nginx. */
  statsPort: number;
  /** One receiver replica per port, named r1, r2, … in order. */
  replicaPorts: number[];
  /** Folder for the rendered configuration, the pid file and nginx's temporary files. */
  dir: string;
  /** The checkout holding `ops/` (default: the working directory). */
  root?: string;
}

/** One replica's line of HAProxy's statistics. */
export interface ServerStats {
  name: string;
  /** `UP`, `DOWN`, `MAINT`, `UP 1/2`, `no check`… */
  status: string;
  /** Requests sent to it (`stot`: sessions, one per request without keep-alive to the server). */
  sessions: number;
  /** Retries and redispatches it caused (`wretr`, `wredis`). */
  retries: number;
  redispatches: number;
}

export interface Balancer {
  kind: BalancerKind;
  url: string;
  proc: ChildProcess;
  /** Everything it wrote so far (HAProxy's request log, nginx's errors). */
  output: () => string;
  /** HAProxy: each replica's line of its statistics; nginx: undefined (no such page). */
  servers: () => Promise<ServerStats[] | undefined>;
  stop: () => Promise<void>;
}

/** The shipped configuration of `kind`, its listen and server addresses rewritten for `o`. */
export function renderConfig(kind: BalancerKind, o: BalancerOptions): string {
  const root = o.root ?? process.cwd();
  const text = readFileSync(resolve(root, 'ops', kind === 'haproxy' ? 'haproxy.cfg' : 'nginx.conf'), 'utf8');
  const lines = text.split('\n');
  const serverLine =
    kind === 'haproxy' ? /^(\s*)server r\d+ 127\.0\.0\.1:\d+(.*)$/ : /^(\s*)server 127\.0\.0\.1:\d+(.*);$/;
  const first = lines.findIndex((l) => serverLine.test(l));
  if (first < 0) throw new Error(`ops/${kind}: no server line to rewrite`);
  const [, indent, rest] = serverLine.exec(lines[first]) as RegExpExecArray;
  const servers = o.replicaPorts.map((p, i) =>
    kind === 'haproxy'
      ? `${indent}server r${i + 1} 127.0.0.1:${p}${rest}`
      : `${indent}server 127.0.0.1:${p}${rest};`,
  );
  const out = lines.filter((l, i) => i === first || !serverLine.test(l));
  out.splice(out.indexOf(lines[first]), 1, ...servers);
  let rendered = out.join('\n');
  if (kind === 'haproxy') {
    rendered = rendered
      .replace(/^(\s*bind )127\.0\.0\.1:8080$/m, `$1127.0.0.1:${o.port}`)
      .replace(/^(\s*bind )127\.0\.0\.1:8404$/m, `$1127.0.0.1:${o.statsPort}`);
  } else {
    const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
      .map((t) => `    ${t}_temp_path ${o.dir}/${t};`)
      .join('\n');
    rendered = rendered
      .replace(/^(\s*listen )127\.0\.0\.1:8081;$/m, `$1127.0.0.1:${o.port};`)
      .replace(/^http \{$/m, `http {\n${temp}`);
  }
  for (const needle of [String(o.port), ...o.replicaPorts.map(String)])
    if (!rendered.includes(`127.0.0.1:${needle}`))
      throw new Error(`ops/${kind}: could not rewrite to ${needle}`);
  return rendered;
}

function listening(port: number): Promise<boolean> {
  return new Promise((done) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      done(true);
    });
    s.once('error', () => done(false));
  });
}

/** Parses HAProxy's `/stats;csv` into the lines of backend `receivers`' servers. */
export function parseStats(csv: string): ServerStats[] {
  const [head, ...rows] = csv.trim().split('\n');
  const cols = head.replace(/^# /, '').split(',');
  const at = (name: string) => cols.indexOf(name);
  return rows
    .map((r) => r.split(','))
    .filter((f) => f[at('pxname')] === 'receivers' && /^r\d+$/.test(f[at('svname')]))
    .map((f) => ({
      name: f[at('svname')],
      status: f[at('status')],
      sessions: Number(f[at('stot')]),
      retries: Number(f[at('wretr')] || 0),
      redispatches: Number(f[at('wredis')] || 0),
    }));
}

/**
 * Starts `kind` in the foreground on the configuration of {@link renderConfig} and waits until it
 * accepts connections (at most 10 s). @throws Error with its output when it exits or does not listen.
 */
export async function startBalancer(kind: BalancerKind, o: BalancerOptions): Promise<Balancer> {
  mkdirSync(o.dir, { recursive: true });
  chmodSync(o.dir, 0o777); // nginx's workers (user nobody) write its temporary files there
  const config = resolve(o.dir, kind === 'haproxy' ? 'haproxy.cfg' : 'nginx.conf');
  writeFileSync(config, renderConfig(kind, o));
  const [cmd, argv] =
    kind === 'haproxy'
      ? ['haproxy', ['-db', '-f', config]]
      : ['nginx', ['-p', o.dir, '-c', config, '-e', 'stderr', '-g', `daemon off; pid ${o.dir}/nginx.pid;`]];
  const proc = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  let ended = false;
  const exited = new Promise<void>((done) => proc.once('exit', () => ((ended = true), done())));
  process.once('exit', () => proc.kill('SIGKILL'));
  const balancer: Balancer = {
    kind,
    url: `http://127.0.0.1:${o.port}`,
    proc,
    output: () => out,
    servers: async () => {
      if (kind !== 'haproxy') return undefined;
      const res = await fetch(`http://127.0.0.1:${o.statsPort}/stats;csv`);
      return parseStats(await res.text());
    },
    stop: async () => {
      if (ended) return;
      proc.kill(kind === 'haproxy' ? 'SIGTERM' : 'SIGQUIT');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  const until = Date.now() + 10_000;
  while (!(await listening(o.port))) {
    if (ended || Date.now() > until) {
      await balancer.stop();
      throw new Error(`${kind} did not start on ${o.port}:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return balancer;
}
