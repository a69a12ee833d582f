// `npm run build` (also `npm start`'s prestart): compiles the app (tsc, tsconfig.build.json) and
// the operator console (Vite) into a fresh folder, then brings dist/ up to it file by file, so a
// copy already running from dist/ keeps serving: every changed file is written beside its place
// and renamed over it (a reader sees the old file or the new one, never none), the console's
// index.html last (its new assets are there before it names them), and only then are files the
// new build no longer has removed. Before, `nest build` and Vite deleted dist/ first, and a
// running copy's /ops answered 404 for the whole build (issue 38, item 5;
// test/reliability/second-copy.spec.ts). Exit code: the failing step's, dist/ left as it was.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import process from 'node:process';

const ROOT = resolve(import.meta.dirname, '..');
const DIST = join(ROOT, 'dist');
/** A file being written into dist/ by some build: `<name>.<pid>.build-tmp`, never removed as stale. */
const TEMP = /\.\d+\.build-tmp$/;
const next = join(ROOT, 'node_modules', '.cache', 'receiver-build', String(process.pid));

/** Runs a step of the build with its output on ours; a failure ends the build with its code. */
function step(args) {
  const run = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
  if (run.status !== 0) {
    rmSync(next, { recursive: true, force: true });
    process.exit(run.status ?? 1);
  }
}

/** Every file under `dir`, relative to it. */
function files(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

/** Puts `from` at `to` by a rename within dist/, unless `to` already holds the same bytes. */
function place(from, to) {
  const bytes = readFileSync(from);
  if (existsSync(to) && statSync(to).size === bytes.length && readFileSync(to).equals(bytes)) return;
  mkdirSync(dirname(to), { recursive: true });
  const temp = `${to}.${process.pid}.build-tmp`;
  writeFileSync(temp, bytes);
  renameSync(temp, to);
}

rmSync(next, { recursive: true, force: true });
step([join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', next]);
step([
  join(ROOT, 'node_modules/vite/bin/vite.js'),
  'build',
  '--config',
  'console/vite.config.ts',
  '--outDir',
  join(next, 'console'),
  '--emptyOutDir',
]);

const built = files(next);
const index = join('console', 'index.html');
for (const file of [...built.filter((f) => f !== index), ...built.filter((f) => f === index)])
  place(join(next, file), join(DIST, file));
const kept = new Set(built);
for (const file of files(DIST)) if (!kept.has(file) && !TEMP.test(file)) unlinkSync(join(DIST, file));
// Folders left empty, deepest first.
const folders = readdirSync(DIST, { recursive: true, withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => join(e.parentPath, e.name))
  .sort((a, b) => b.split(sep).length - a.split(sep).length);
for (const folder of folders) if (readdirSync(folder).length === 0) rmdirSync(folder);
rmSync(next, { recursive: true, force: true });
