import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The operator console (docs/console.md): built into `dist/console` by `npm run build`, served by
 * the receiver at `/ops`. `npm run console:dev` serves it with hot reload on :5173 and proxies the
 * API to a running receiver (`RECEIVER_URL`, default http://127.0.0.1:3000).
 */
const receiver = process.env.RECEIVER_URL ?? 'http://127.0.0.1:3000';
const apiPrefixes = [
  '/auth',
  '/overview',
  '/search',
  '/coupons',
  '/accounts',
  '/callbacks',
  '/wallet',
  '/events',
  '/bulk-actions',
  '/operator-actions',
];

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ops/',
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // Small enough that one file per kind is simplest to serve and cache.
    chunkSizeWarningLimit: 800,
  },
  server: {
    port: 5173,
    strictPort: true,
    proxy: Object.fromEntries(apiPrefixes.map((p) => [p, { target: receiver, changeOrigin: true }])),
  },
});
