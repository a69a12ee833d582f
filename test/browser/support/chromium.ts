import { existsSync } from 'node:fs';

/**
 * Debian's chromium (`apt-get install -y chromium`): the only browser the browser tests use.
 * playwright-core drives it and never downloads one; `CHROMIUM_PATH` names another binary.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * Launch flags: headless without a sandbox (the tests run as root), no GPU, and nothing of its
 * own on the network (no QUIC, no background, component or sync traffic, no first-run pages).
 */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The one line a run without chromium ends with. */
export const NO_CHROMIUM = `browser tests: ${CHROMIUM_PATH} not found: install Debian's chromium (apt-get install -y chromium); nothing here downloads a browser`;

/** Whether {@link CHROMIUM_PATH} exists. */
export const chromiumInstalled = (): boolean => existsSync(CHROMIUM_PATH);
