import { Link, useSearch } from 'wouter';
import { query } from '../api';
import { Badge, Loading, Screen, WithTimes } from '../components';
import { useGet } from '../session';
import type { SearchHit } from '../types';

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
  const { data, error, loading } = useGet<{ q: string; items: SearchHit[] }>(
    q ? `/search${query({ q })}` : null,
  );
  return (
    <Screen title={<>Search: {q}</>}>
      {!q && <p>Type an id in the search box above.</p>}
      {q && <Loading loading={loading} error={error} />}
      {data && data.items.length === 0 && <p>Nothing has the id “{q}”.</p>}
      {data && data.items.length > 0 && (
        <table aria-label="search results">
          <thead>
            <tr>
              <th scope="col">kind</th>
              <th scope="col">record</th>
            </tr>
          </thead>
          <tbody>
            {data.items.map((hit) => {
              const href = screenOf(hit.link);
              return (
                <tr key={`${hit.kind}:${hit.id}`}>
                  <td>
                    <Badge text={hit.kind} />
                  </td>
                  <td>
                    {href ? (
                      <Link href={href}>
                        <WithTimes text={hit.label} />
                      </Link>
                    ) : (
                      <WithTimes text={hit.label} />
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </Screen>
  );
}
