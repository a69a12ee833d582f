import { Link, useSearch } from 'wouter';
import { query } from '../api';
import { Badge, Loading, Screen, Table, WithTimes } from '../components';
import { useGet } from '../session';
import type { SearchResult } from '../types';

/** API paths of search hits → the console screen that shows the record. */
const SCREENS: [RegExp, (m: RegExpExecArray) => string][] = [
  [/^\/callbacks\/batches\/(.+)$/, (m) => `/batches/${m[1]}`],
  [/^\/callbacks\/quarantine\/(\d+)$/, (m) => `/quarantine/${m[1]}`],
  [/^\/callbacks\/deliveries$/, () => '/deliveries'],
  [/^\/coupons\/([^/]+)$/, (m) => `/coupons/${m[1]}`],
  [/^\/accounts\/([^/]+)(\/statement)?$/, (m) => `/accounts/${m[1]}`],
  [/^\/wallet\/outbox\/(\d+)$/, (m) => `/wallet/outbox/${m[1]}`],
  [/^\/events\/([^/]+)\/outbox\/(\d+)$/, (m) => `/events/${m[1]}/outbox/${m[2]}`],
  [/^\/operator-actions(\?.*)?$/, (m) => `/operator-actions${m[1] ?? ''}`],
];

/** The console route of an API link (the API's path segments are already encoded). */
export function screenOf(link: string): string | null {
  for (const [pattern, to] of SCREENS) {
    const m = pattern.exec(link);
    if (m) return to(m);
  }
  return null;
}

/** One box for any id: every record whose id it is, each linking to its screen. */
export function SearchScreen() {
  const q = new URLSearchParams(useSearch()).get('q') ?? '';
  const { data, error, loading } = useGet<SearchResult>(q ? `/search${query({ q })}` : null);
  return (
    <Screen title={<>Search: {q}</>}>
      {!q && <p>Type an id in the search box above.</p>}
      {q && <Loading loading={loading} error={error} />}
      {data && data.items.length === 0 && <p>Nothing has the id “{q}”.</p>}
      {data && data.items.length > 0 && (
        <Table
          label="search results"
          rows={data.items}
          rowKey={(hit) => `${hit.kind}:${hit.id}`}
          columns={[
            { header: 'kind', cell: (hit) => <Badge text={hit.kind} /> },
            {
              header: 'record',
              cell: (hit) => {
                const href = screenOf(hit.link);
                return href ? (
                  <Link href={href}>
                    <WithTimes text={hit.label} />
                  </Link>
                ) : (
                  <WithTimes text={hit.label} />
                );
              },
            },
          ]}
        />
      )}
    </Screen>
  );
}
