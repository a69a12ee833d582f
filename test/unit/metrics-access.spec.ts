import { networkList } from '../../src/platform/health/metrics-access.guard.js';
import { loadConfig } from '../../src/app.config.js';
import { REQUIRED_ENV } from '../support/secrets.js';

// METRICS_ALLOWED_NETWORKS: which scraper addresses may read /metrics without a bearer key.

describe('METRICS_ALLOWED_NETWORKS', () => {
  const required = REQUIRED_ENV;

  it('parses addresses and CIDR blocks, IPv4 and IPv6; unset allows none', () => {
    expect(loadConfig({ ...required }).metrics.metricsAllowedNetworks).toEqual([]);
    expect(
      loadConfig({ ...required, METRICS_ALLOWED_NETWORKS: ' 10.0.0.0/8, 127.0.0.1 ,fd00::/8' }).metrics
        .metricsAllowedNetworks,
    ).toEqual(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);
  });

  it('refuses what is not an address or block, naming it', () => {
    expect(() => loadConfig({ ...required, METRICS_ALLOWED_NETWORKS: '10.0.0.0/8,intranet' })).toThrow(
      /METRICS_ALLOWED_NETWORKS.*intranet/,
    );
    expect(() => loadConfig({ ...required, METRICS_ALLOWED_NETWORKS: '10.0.0.0/33' })).toThrow(
      /METRICS_ALLOWED_NETWORKS/,
    );
  });

  it('matches peers inside the blocks only', () => {
    const list = networkList(['10.0.0.0/8', '192.168.1.7', 'fd00::/8']);
    expect(list.check('10.255.0.1', 'ipv4')).toBe(true);
    expect(list.check('11.0.0.1', 'ipv4')).toBe(false);
    expect(list.check('192.168.1.7', 'ipv4')).toBe(true);
    expect(list.check('192.168.1.8', 'ipv4')).toBe(false);
    expect(list.check('fd12::1', 'ipv6')).toBe(true);
    expect(list.check('2001:db8::1', 'ipv6')).toBe(false);
  });
});
