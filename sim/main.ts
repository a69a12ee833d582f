import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { listBatchFiles } from './batch-files.js';
import { runCheck } from './check.js';
import { describeManifest, generate, Manifest, parseCurrencies, SequenceCurrency } from './generate.js';
import { PartnerApi, registerManifest } from './partner-api.js';
import { MAX_SEED } from './random.js';
import { DEFAULT_TIMEOUT_MS, sendBatches } from './send.js';
import { RunningServe, startServe } from './serve.js';
import { RunningWallet, startWallet } from './wallet.js';

/**
 * The `sportapi` command line (`npm run sportapi -- <command> ...`). `runCli` returns the exit
 * code: 0 success, 1 a batch not delivered / a rule failed, 2 a usage error.
 */

export const USAGE = `usage: npm run sportapi -- <command> [options]

  send FILE|DIR --url URL --secret S [--time-scale X] [--timeout-ms 10000]
                [--signature-header X-Signature] [--register MANIFEST --ops-key K [--ops-url URL]]
      Deliver batch files as SportAPI does (CONTRACT §2): exact bytes signed with HMAC-SHA256,
      10 s per attempt, retries after timeouts, transport errors and 500/502/503/504 after
      1 min, 5 min, 15 min, 1 h (times --time-scale). A DIR is sent in file-name order
      (coupons.json skipped). --url is the callback URL (a bare origin gets /sportapi/callback).
      --register first deposits and registers the manifest's accounts and coupons through the
      partner API at --ops-url (default: the origin of --url).

  generate --out DIR --seed N [--coupons 20] [--batches 10] [--prefix P] [--max-batch-size 100]
           [--currencies EUR:2,JPY:0,KWD:3,USDT:6,BTC:8] [--force]
      Write a seeded sequence of batch files (0001.json, ...) and the coupons.json manifest.
      --currencies: accounts in several currencies, amounts at each one's minor units (the
      receiver needs CURRENCY_MINOR_UNITS for codes outside ISO 4217, e.g. USDT:6,BTC:8).

  serve --port P [--host 127.0.0.1] [--data FILE|DIR] [--api-key K]
        [--proxy-to URL [--drop-after-response RATE] [--seed N]]
      A stand-in SportAPI: GET /coupons/{coupon_code} from DIR's latest states; POSTs forwarded
      to --proxy-to, the connection dropped after the receiver answered with probability RATE.

  check --url URL --secret S --ops-key K [--callback-path /sportapi/callback] [--eventual MS]
      Conformance run against a receiver: each CONTRACT rule PASS/FAIL. --eventual MS: money
      checks wait up to MS for a receiver that applies after its 200 (inbox mode).

  wallet --port P --secret S [--host 127.0.0.1] [--fail-rate R] [--drop-after-apply R]
         [--element-fail-rate R] [--slow-ms N] [--seed 1] [--allow-negative]
         [--accounts a,b]
      A stand-in wallet (docs/wallet-http-contract.md): POST /transactions signed with S, each
      transactionId applied once, a debit above the balance refused (402); also the batch call
      (a JSON array, one result per element). --fail-rate: answer 503 (half of them 429) before
      applying; --drop-after-apply: close the connection after a 200 (the answer is lost);
      --element-fail-rate: answer a batch element transient; --slow-ms: wait before handling; --accounts: the only accounts it knows (404 unknown_account for
      others; default any, opened at its first transaction). GET /balances, /transactions,
      /stats; POST /accounts/{accountId}/deposits|withdrawals {amount, currency}.
`;

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Resolves when the process is asked to stop (serve runs until then). */
  stopSignal?: () => Promise<void>;
  /** Receives the running server of `serve` (tests). */
  onServe?: (server: RunningServe) => void;
  /** Receives the running wallet of `wallet` (tests). */
  onWallet?: (wallet: RunningWallet) => void;
}

class UsageError extends Error {}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

function number(
  values: Record<string, unknown>,
  name: string,
  fallback: number,
  check: (n: number) => boolean,
  what: string,
): number {
  const value = values[name];
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value === '' || !Number.isFinite(n) || !check(n)) throw new UsageError(`--${name} must be ${what}`);
  return n;
}

const integerFrom = (min: number, max: number) => (n: number) => Number.isInteger(n) && n >= min && n <= max;

async function send(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      secret: { type: 'string' },
      'time-scale': { type: 'string' },
      'timeout-ms': { type: 'string' },
      'signature-header': { type: 'string' },
      register: { type: 'string' },
      'ops-key': { type: 'string' },
      'ops-url': { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new UsageError('send takes one FILE or DIR');
  const url = required(values, 'url');
  const secret = required(values, 'secret');
  const timeScale = number(values, 'time-scale', 1, (n) => n >= 0, 'a number >= 0');
  const timeoutMs = number(
    values,
    'timeout-ms',
    DEFAULT_TIMEOUT_MS,
    integerFrom(1, 3_600_000),
    'an integer of ms',
  );
  const files = await listBatchFiles(positionals[0]);
  if (files.length === 0) throw new UsageError(`no batch files in ${positionals[0]}`);
  if (values.register !== undefined) {
    const manifest = JSON.parse(await readFile(values.register, 'utf8')) as Manifest;
    const api = new PartnerApi(values['ops-url'] ?? new URL(url).origin, required(values, 'ops-key'));
    await registerManifest(manifest, api);
    io.out(`registered ${manifest.coupons.length} coupons on ${manifest.accounts.length} accounts`);
  }
  const report = await sendBatches(positionals[0], {
    url,
    secret,
    timeScale,
    timeoutMs,
    signatureHeader: values['signature-header'],
    log: io.out,
    warn: io.err,
  });
  return report.ok ? 0 : 1;
}

async function generateCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      out: { type: 'string' },
      seed: { type: 'string' },
      coupons: { type: 'string' },
      batches: { type: 'string' },
      prefix: { type: 'string' },
      'max-batch-size': { type: 'string' },
      currencies: { type: 'string' },
      force: { type: 'boolean' },
    },
  });
  const out = required(values, 'out');
  const seed = number(values, 'seed', NaN, integerFrom(0, MAX_SEED), `an integer from 0 to ${MAX_SEED}`);
  if (Number.isNaN(seed)) throw new UsageError('--seed is required');
  const result = await generate({
    out,
    seed,
    coupons: number(values, 'coupons', 20, integerFrom(1, 100_000), 'an integer from 1 to 100000'),
    batches: number(values, 'batches', 10, integerFrom(1, 100_000), 'an integer from 1 to 100000'),
    maxBatchSize: number(values, 'max-batch-size', 100, integerFrom(1, 100), 'an integer from 1 to 100'),
    prefix: values.prefix,
    currencies: currenciesOption(values.currencies),
    force: values.force,
  });
  io.out(`wrote ${out}: ${describeManifest(result.manifest)}`);
  return 0;
}

/** `--currencies EUR:2,JPY:0`, or undefined (one currency, EUR). */
function currenciesOption(text: string | undefined): SequenceCurrency[] | undefined {
  if (text === undefined) return undefined;
  try {
    return parseCurrencies(text);
  } catch (err) {
    throw new UsageError(`--currencies: ${(err as Error).message}`, { cause: err });
  }
}

async function serve(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      data: { type: 'string' },
      'api-key': { type: 'string' },
      'proxy-to': { type: 'string' },
      'drop-after-response': { type: 'string' },
      seed: { type: 'string' },
    },
  });
  const port = number(values, 'port', NaN, integerFrom(0, 65_535), 'an integer from 0 to 65535');
  if (Number.isNaN(port)) throw new UsageError('--port is required');
  const server = await startServe({
    port,
    host: values.host,
    data: values.data,
    apiKey: values['api-key'],
    proxyTo: values['proxy-to'],
    dropAfterResponse: number(values, 'drop-after-response', 0, (n) => n >= 0 && n <= 1, 'between 0 and 1'),
    seed: number(values, 'seed', 1, integerFrom(0, MAX_SEED), `an integer from 0 to ${MAX_SEED}`),
    log: io.out,
  });
  io.out(
    `sportapi stand-in listening on ${server.url}: ${server.coupons} coupons readable at GET /coupons/{coupon_code}` +
      (values['proxy-to'] ? `; POSTs forwarded to ${values['proxy-to']}` : ''),
  );
  io.onServe?.(server);
  if (io.stopSignal) {
    await io.stopSignal();
    await server.close();
    io.out(`stopped: ${JSON.stringify(server.stats)}`);
  }
  return 0;
}

async function check(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      url: { type: 'string' },
      secret: { type: 'string' },
      'ops-key': { type: 'string' },
      'callback-path': { type: 'string' },
      'signature-header': { type: 'string' },
      eventual: { type: 'string' },
    },
  });
  const report = await runCheck({
    url: required(values, 'url'),
    secret: required(values, 'secret'),
    opsKey: required(values, 'ops-key'),
    callbackPath: values['callback-path'],
    signatureHeader: values['signature-header'],
    eventualMs: number(values, 'eventual', 0, integerFrom(0, 600_000), 'an integer from 0 to 600000 (ms)'),
    log: io.out,
  });
  return report.ok ? 0 : 1;
}

async function wallet(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      secret: { type: 'string' },
      'fail-rate': { type: 'string' },
      'drop-after-apply': { type: 'string' },
      'element-fail-rate': { type: 'string' },
      'slow-ms': { type: 'string' },
      seed: { type: 'string' },
      'allow-negative': { type: 'boolean' },
      accounts: { type: 'string' },
    },
  });
  const port = number(values, 'port', NaN, integerFrom(0, 65_535), 'an integer from 0 to 65535');
  if (Number.isNaN(port)) throw new UsageError('--port is required');
  const rate = (name: string) => number(values, name, 0, (n) => n >= 0 && n <= 1, 'between 0 and 1');
  const running = await startWallet({
    port,
    host: values.host,
    secret: required(values, 'secret'),
    failRate: rate('fail-rate'),
    dropAfterApply: rate('drop-after-apply'),
    elementFailRate: rate('element-fail-rate'),
    slowMs: number(values, 'slow-ms', 0, integerFrom(0, 600_000), 'an integer from 0 to 600000 (ms)'),
    seed: number(values, 'seed', 1, integerFrom(0, MAX_SEED), `an integer from 0 to ${MAX_SEED}`),
    allowNegative: values['allow-negative'],
    accounts: values.accounts?.split(',').filter((a) => a !== ''),
    log: io.out,
  });
  io.out(
    `wallet stand-in listening on ${running.url}: POST /transactions` +
      (values['allow-negative'] ? ' (negative balances allowed)' : ''),
  );
  io.onWallet?.(running);
  if (io.stopSignal) {
    await io.stopSignal();
    await running.close();
    io.out(`stopped: ${JSON.stringify(running.stats())}`);
  }
  return 0;
}

const COMMANDS: Record<string, (args: string[], io: CliIo) => Promise<number>> = {
  send,
  generate: generateCommand,
  serve,
  check,
  wallet,
};

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    (command === undefined ? io.err : io.out)(USAGE);
    return command === undefined ? 2 : 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    io.err(`unknown command: ${command}\n\n${USAGE}`);
    return 2;
  }
  try {
    return await run(args, io);
  } catch (error) {
    const usage =
      error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true;
    io.err(`sportapi ${command}: ${(error as Error).message}`);
    if (usage) io.err(`\n${USAGE}`);
    return usage ? 2 : 1;
  }
}
