/**
 * Child processes and CPU accounting of the benchmarks (bench/run.ts, bench/open-loop.ts): start a
 * server and wait for it, stop it, read a process's CPU time and memory from /proc and the CPU
 * time of a database's PostgreSQL backends, percentiles.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { withClient } from './setup.js';

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The `--flags` between `node` and `dist/src/main.js` of an npm script. @throws Error when it runs no such command. */
export function startScriptNodeFlags(script: string): string[] {
  const match = /\bnode((?:\s+--\S+)*)\s+dist\/src\/main\.js\b/.exec(script);
  if (!match) throw new Error(`package.json's start script does not run node dist/src/main.js: ${script}`);
  return match[1].split(/\s+/).filter(Boolean);
}

/** Children started and not yet exited: killed when the benchmark's process exits without stopping them. */
const running = new Set<ChildProcess>();
let killsChildrenAtExit = false;

/**
 * Once per process: at `exit` (an error path that skipped its cleanup, or `process.exit` from a
 * signal handler such as run.ts's) every child still running gets SIGKILL, so that no receiver is
 * left holding its port and its database's connections.
 */
function killChildrenAtExit(): void {
  if (killsChildrenAtExit) return;
  killsChildrenAtExit = true;
  process.once('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

/** Tracks `child` for {@link killChildrenAtExit} until it exits. */
function trackChild(child: ChildProcess): void {
  killChildrenAtExit();
  running.add(child);
  child.once('exit', () => running.delete(child));
}

/** How {@link startChild} starts a process. */
export interface ChildOptions {
  cwd: string;
  /** Its output goes to this file (appended to with `append`). */
  logPath: string;
  append?: boolean;
  /** Headers of the start-up probe (e.g. the partner API key). */
  probeHeaders?: Record<string, string>;
  /** Writes a V8 CPU profile here at exit (`--cpu-prof`). */
  cpuProfileDir?: string;
}

/**
 * Starts `node <nodeArgs>` with `env`, its output to `options.logPath`, and waits until `probe`
 * answers anything (at most 90 s). @throws Error with the log's tail when it exits first.
 */
export async function startChild(
  name: string,
  nodeArgs: string[],
  env: NodeJS.ProcessEnv,
  probe: string,
  options: ChildOptions,
): Promise<ChildProcess> {
  const { logPath } = options;
  mkdirSync(dirname(logPath), { recursive: true });
  const log = openSync(logPath, options.append ? 'a' : 'w');
  const flags = options.cpuProfileDir
    ? ['--cpu-prof', `--cpu-prof-dir=${resolve(options.cpuProfileDir)}`]
    : [];
  const child = spawn(process.execPath, [...flags, ...nodeArgs], {
    cwd: options.cwd,
    env,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  trackChild(child);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  const until = Date.now() + 90_000;
  for (;;) {
    if (exited !== undefined) {
      const tail = readFileSync(logPath, 'utf8').split('\n').slice(-15).join('\n');
      throw new Error(`${name} exited with ${exited} during start-up (log ${logPath}):\n${tail}`);
    }
    try {
      const res = await fetch(probe, { headers: options.probeHeaders, signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      return child;
    } catch {
      if (Date.now() > until) throw new Error(`${name} did not answer ${probe} within 90 s`);
      await sleep(200);
    }
  }
}

/** SIGTERM, then SIGKILL after 15 s; resolves when the child has exited. */
export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await done;
  clearTimeout(timer);
}

/** Resident set size now and its high-water mark, in MB, from /proc (Linux). */
export function memoryOf(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) of a process so far, in ms, from /proc (Linux; 100 ticks per second). */
export function cpuMsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/**
 * CPU time of the PostgreSQL backends serving a database, by pid (the server must run on this
 * machine and /proc be readable; otherwise empty).
 */
export async function backendCpu(dbUrl: string): Promise<Map<number, number>> {
  const dbName = new URL(dbUrl).pathname.slice(1);
  const pids = await withClient(dbUrl, async (c) =>
    (
      await c.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [dbName],
      )
    ).rows.map((r) => r.pid),
  );
  const cpu = new Map<number, number>();
  for (const pid of pids) {
    const ms = cpuMsOf(pid);
    if (ms !== undefined) cpu.set(pid, ms);
  }
  return cpu;
}

/** CPU ms the backends used between two {@link backendCpu} samples (new backends count whole). */
export function backendCpuUsed(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

/** The `p`th percentile (nearest rank) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * Runs a benchmark's `main`. On SIGINT or SIGTERM, or when `main` fails (the error printed with
 * its stack), `cleanup` stops its servers and drops what it made; then the process exits with 130
 * (a signal) or 1 (a failure).
 */
export function runBench(main: () => Promise<void>, cleanup: () => Promise<void>): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`${signal}: stopping the servers`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  main().catch(async (err: unknown) => {
    console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await cleanup();
    process.exit(1);
  });
}
