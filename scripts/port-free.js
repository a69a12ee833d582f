// `npm start`'s first step (prestart, before the build): is HOST:PORT free? A second copy on a port
// in use stops at once with the line src/main.ts prints for it (its own check, for start:prod),
// instead of after a whole build (issue 38, item 5). Reads `.env` as the start does; a PORT that
// is not a port is left to the start's validation, which names it. Exit code 1 when taken.
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import process from 'node:process';

if (existsSync('.env')) process.loadEnvFile('.env');
const host = process.env.HOST || '0.0.0.0';
const port = Number(process.env.PORT || 3000);
if (Number.isInteger(port) && port > 0 && port <= 65535) {
  const problem = await new Promise((done) => {
    const probe = createServer();
    probe.once('error', (err) =>
      done(
        err.code === 'EADDRINUSE'
          ? 'is in use by another process'
          : `cannot be used (${err.code ?? err.message})`,
      ),
    );
    probe.listen(port, host, () => probe.close(() => done(undefined)));
  });
  if (problem) {
    process.stderr.write(`start-up failed: PORT ${port} on ${host} ${problem}; set PORT\n`);
    process.exit(1);
  }
}
