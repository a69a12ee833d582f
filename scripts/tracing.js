// `node --import=./scripts/tracing.js scripts/run-built.js dist/src/main.js` (npm run start:prod):
// preloads dist/src/tracing.js, the OpenTelemetry set-up that does nothing unless OTEL_* variables
// ask for traces (docs/operating.md, "Traces"), when it is built; without dist/ it does nothing,
// so that run-built.js names `npm run build` in its one line.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const file = resolve('dist/src/tracing.js');
if (existsSync(file)) await import(pathToFileURL(file).href);
