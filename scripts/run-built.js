// `node scripts/run-built.js dist/<file>.js [arguments…]`: runs a built command from dist/ as if
// `node dist/<file>.js [arguments…]` had been run, without building it. The operator's npm
// scripts (start:prod, migration:run, ledger:verify, wallet:reconcile, sportapi) use it: a build
// (scripts/build.js replaces dist/'s files) would hand a process starting meanwhile a mixed build
// (docs/operating.md, "Operator commands"). When the file is missing: one line naming
// `npm run build` on stderr, exit code 2. It runs the file in its own process, and the npm scripts
// `exec` it, so a signal to `npm run …` reaches the command (test/unit/npm-scripts.spec.ts).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';

const [node, , file, ...args] = process.argv;
if (!file || !existsSync(file)) {
  const what = !file ? 'no file given' : existsSync('dist') ? `${file} is missing` : 'dist/ is missing';
  process.stderr.write(
    `${what}: run npm run build first (this command runs the built code in dist/ and never builds it)\n`,
  );
  process.exit(2);
}
const path = resolve(file);
process.argv = [node, path, ...args];
await import(pathToFileURL(path).href);
