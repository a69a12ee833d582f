import { setTracingShutdown, shutdownTracing } from '../../src/platform/observability/tracing.js';

// src/main.ts stops the process 10 s after SIGTERM at the latest: flushing the last spans to a
// collector that does not answer must not use that up (issue 41).

describe('shutdownTracing', () => {
  it('waits for the flush when it ends in time, and only once', async () => {
    let flushed = 0;
    setTracingShutdown(async () => {
      flushed++;
    });
    await shutdownTracing(1000);
    await shutdownTracing(1000);
    expect(flushed).toBe(1);
  });

  it('gives a flush that never ends up after its limit', async () => {
    setTracingShutdown(() => new Promise<void>(() => undefined));
    const started = Date.now();
    await shutdownTracing(100);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
  });

  it('does not throw when the flush fails', async () => {
    setTracingShutdown(() => Promise.reject(new Error('collector gone')));
    await expect(shutdownTracing(1000)).resolves.toBeUndefined();
  });
});
