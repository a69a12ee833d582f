#!/usr/bin/env node
/**
 * `npm run sportapi -- <command> ...` (after `npm run build`): the SportAPI simulator. A thin
 * wrapper; the commands live in main.ts and the modules beside it.
 */
import { once } from 'node:events';
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  stopSignal: () => Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]).then(() => undefined),
});
