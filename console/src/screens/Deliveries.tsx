import { useState } from 'react';
import { Link } from 'wouter';
import { query, seg } from '../api';
import {
  Amount,
  Badge,
  CouponStatus,
  Facts,
  Field,
  Loading,
  Pager,
  Screen,
  Time,
  toneOf,
  usePager,
} from '../components';
import { useGet } from '../session';
import type { BatchAudit, DeliveryAttempt, DeliveryPage } from '../types';

const OUTCOMES = ['processed', 'accepted', 'duplicate', 'conflict', 'rejected', 'unauthorized', 'failed'];

/**
 * Why an attempt has no batch id: its signature was not verified (`unauthorized`: missing, wrong
 * or stale), or its body held no valid batch id (say, signed but malformed JSON; see its error).
 */
function noBatch(a: Pick<DeliveryAttempt, 'outcome'>): string {
  return a.outcome === 'unauthorized' ? '— (signature not verified)' : '— (no valid batch id in the body)';
}

/** Delivery attempts as a table (the list and a batch's page). */
function AttemptsTable({ attempts, withBatch }: { attempts: DeliveryAttempt[]; withBatch: boolean }) {
  return (
    <table aria-label="delivery attempts">
      <thead>
        <tr>
          <th scope="col">received</th>
          {withBatch && <th scope="col">batch</th>}
          <th scope="col">outcome</th>
          <th scope="col">HTTP</th>
          <th scope="col">error</th>
          <th scope="col">coupons</th>
          <th scope="col">ms</th>
          <th scope="col">payload hash</th>
          <th scope="col">request id</th>
          <th scope="col">trace id</th>
          <th scope="col">by</th>
        </tr>
      </thead>
      <tbody>
        {attempts.map((a) => (
          <tr key={a.id}>
            <td>
              <Time at={a.receivedAt} />
            </td>
            {withBatch && (
              <td>{a.batchId ? <Link href={`/batches/${seg(a.batchId)}`}>{a.batchId}</Link> : noBatch(a)}</td>
            )}
            <td>
              <Badge text={a.outcome} tone={toneOf(a.outcome)} />
            </td>
            <td>{a.httpStatus}</td>
            <td>{a.errorCode ?? ''}</td>
            <td>{a.couponCount ?? ''}</td>
            <td>{a.durationMs}</td>
            <td>
              <code title={a.payloadHash ?? undefined}>
                {a.payloadHash ? `${a.payloadHash.slice(0, 12)}…` : '—'}
              </code>
            </td>
            <td>
              <code>{a.requestId ?? ''}</code>
            </td>
            <td>
              <code>{a.traceId ?? '—'}</code>
            </td>
            <td>{a.actor ?? 'SportAPI'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Every delivery attempt of the callback, newest first, by outcome and batch. */
export function DeliveriesScreen() {
  const pager = usePager();
  const [outcome, setOutcome] = useState('');
  const [batchId, setBatchId] = useState('');
  const { data, error, loading, reload } = useGet<DeliveryPage>(
    `/callbacks/deliveries${query({ outcome, batchId: batchId.trim(), cursor: pager.cursor, limit: 50 })}`,
  );
  return (
    <Screen
      title="Batches and deliveries"
      actions={
        <button type="button" onClick={reload}>
          Refresh
        </button>
      }
    >
      <form className="form inline" onSubmit={(e) => e.preventDefault()} aria-label="filter deliveries">
        <Field label="Outcome">
          {(id) => (
            <select
              id={id}
              value={outcome}
              onChange={(e) => {
                pager.reset();
                setOutcome(e.target.value);
              }}
            >
              <option value="">any</option>
              {OUTCOMES.map((o) => (
                <option key={o}>{o}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Batch id">
          {(id) => (
            <input
              id={id}
              value={batchId}
              onChange={(e) => {
                pager.reset();
                setBatchId(e.target.value);
              }}
            />
          )}
        </Field>
      </form>
      <Loading loading={loading && !data} error={error} />
      {data && (
        <>
          <AttemptsTable attempts={data.items} withBatch />
          {data.items.length === 0 && <p>No delivery attempt matches.</p>}
          <Pager pager={pager} nextCursor={data.nextCursor} />
        </>
      )}
    </Screen>
  );
}

/**
 * A batch: whether it committed, what its coupons did, the financial operations it posted (once)
 * and every delivery attempt: the proof that a redelivery was answered as a duplicate and not paid.
 */
export function BatchScreen({ batchId }: { batchId: string }) {
  const { data, error, loading } = useGet<BatchAudit>(`/callbacks/batches/${seg(batchId)}`);
  const duplicates = data?.deliveries.filter((d) => d.outcome === 'duplicate').length ?? 0;
  return (
    <Screen title={<>Batch {batchId}</>}>
      <Loading loading={loading && !data} error={error} />
      {data && (
        <>
          <Facts
            rows={[
              [
                'committed',
                data.committed ? <Time at={data.committedAt} /> : <Badge text="not committed" tone="bad" />,
              ],
              ['applied by', data.actor ?? 'SportAPI'],
              ['coupons', data.couponCount ?? '—'],
              ['payload hash', <code>{data.payloadHash ?? '—'}</code>],
              ['delivery attempts', data.deliveries.length],
              ['quarantined bodies', data.quarantined],
            ]}
          />
          {duplicates > 0 && (
            <p className="proof" role="note">
              Delivered {data.deliveries.length} times: {duplicates} attempt(s) answered as{' '}
              <strong>duplicate</strong>; the batch's {data.operations.length} financial operation(s) below
              were posted once.
            </p>
          )}
          <h2>Delivery attempts</h2>
          <AttemptsTable attempts={data.deliveries} withBatch={false} />
          <h2>Financial operations posted</h2>
          <table aria-label="operations posted">
            <thead>
              <tr>
                <th scope="col">operation key</th>
                <th scope="col">type</th>
                <th scope="col">coupon</th>
                <th scope="col">account</th>
                <th scope="col">amount</th>
                <th scope="col">posted</th>
              </tr>
            </thead>
            <tbody>
              {data.operations.map((o) => (
                <tr key={o.key}>
                  <td>
                    <code>{o.key}</code>
                  </td>
                  <td>{o.type}</td>
                  <td>
                    {o.couponCode ? <Link href={`/coupons/${seg(o.couponCode)}`}>{o.couponCode}</Link> : '—'}
                  </td>
                  <td>
                    <Link href={`/accounts/${seg(o.accountId)}`}>{o.accountId}</Link>
                  </td>
                  <td>
                    <Amount value={o.amount} currency={o.currency} />
                  </td>
                  <td>
                    <Time at={o.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {data.operations.length === 0 && <p>No financial operation.</p>}
          <h2>Coupon snapshots</h2>
          <table aria-label="coupon snapshots">
            <thead>
              <tr>
                <th scope="col">coupon</th>
                <th scope="col">status</th>
                <th scope="col">realWin</th>
                <th scope="col">transition</th>
                <th scope="col">generation</th>
                <th scope="col">applied</th>
              </tr>
            </thead>
            <tbody>
              {data.coupons.map((c) => (
                <tr key={c.coupon_code}>
                  <td>
                    <Link href={`/coupons/${seg(c.coupon_code)}`}>{c.coupon_code}</Link>
                  </td>
                  <td>
                    <CouponStatus status={c.status} />
                  </td>
                  <td>
                    <Amount value={c.realWin} />
                  </td>
                  <td>{c.transition}</td>
                  <td>{c.generation}</td>
                  <td>{c.applied ? 'yes' : 'history only'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Screen>
  );
}
