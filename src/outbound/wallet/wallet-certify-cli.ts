import { existsSync } from 'node:fs';
import { certifyCommand } from './certify/certify.js';

/**
 * `npm run wallet:certify -- --url URL --secret S [--batch] [--accounts a,b]`: the certification
 * kit for a wallet team (docs/wallet.md, "Certifying a wallet"); exit code 0 every scenario
 * passed, 1 some failed, 3 none failed but some were skipped, 2 a usage error, a wallet that does
 * not answer at all, or a crash. `WALLET_URL`, `WALLET_SECRET`, `WALLET_TIMEOUT_MS` from
 * the environment or `.env` are the defaults.
 */
async function main(): Promise<number> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const { code, stderr } = await certifyCommand(process.argv.slice(2), process.env, (t) =>
    process.stdout.write(t),
  );
  process.stderr.write(stderr);
  return code;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('wallet certification failed:', err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
