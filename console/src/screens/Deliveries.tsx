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
  Table,
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
function AttemptsTable(props: { attempts: DeliveryAttempt[]; withBatch: boolean; empty?: string }) {
  const { attempts, withBatch } = props;
  return (
    <Table
      label="delivery attempts"
      rows={attempts}
      rowKey={(a) => a.id}
      empty={props.empty}
      columns={[
        { header: 'received', cell: (a) => <Time at={a.receivedAt} /> },
        ...(withBatch
          ? [
              {
                header: 'batch',
                cell: (a: DeliveryAttempt) =>
                  a.batchId ? <Link href={`/batches/${seg(a.batchId)}`}>{a.batchId}</Link> : noBatch(a),
              },
            ]
          : []),
        { header: 'outcome', cell: (a) => <Badge text={a.outcome} tone={toneOf(a.outcome)} /> },
        { header: 'HTTP', cell: (a) => a.httpStatus },
        { header: 'error', cell: (a) => a.errorCode ?? '' },
        { header: 'coupons', cell: (a) => a.couponCount ?? '' },
        { header: 'ms', cell: (a) => a.durationMs },
        {
          header: 'payload hash',
          cell: (a) => (
            <code title={a.payloadHash ?? undefined}>
              {a.payloadHash ? `${a.payloadHash.slice(0, 12)}…` : '—'}
            </code>
          ),
        },
        { header: 'request id', cell: (a) => <code>{a.requestId ?? ''}</code> },
        { header: 'trace id', cell: (a) => <code>{a.traceId ?? '—'}</code> },
        { header: 'by', cell: (a) => a.actor ?? 'SportAPI' },
      ]}
    />
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
          <AttemptsTable attempts={data.items} withBatch empty="No delivery attempt matches." />
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
          <Table
            label="operations posted"
            rows={data.operations}
            rowKey={(o) => o.key}
            empty="No financial operation."
            columns={[
              { header: 'operation key', cell: (o) => <code>{o.key}</code> },
              { header: 'type', cell: (o) => o.type },
              {
                header: 'coupon',
                cell: (o) =>
                  o.couponCode ? <Link href={`/coupons/${seg(o.couponCode)}`}>{o.couponCode}</Link> : '—',
              },
              {
                header: 'account',
                cell: (o) => <Link href={`/accounts/${seg(o.accountId)}`}>{o.accountId}</Link>,
              },
              { header: 'amount', cell: (o) => <Amount value={o.amount} currency={o.currency} /> },
              { header: 'posted', cell: (o) => <Time at={o.createdAt} /> },
            ]}
          />
          <h2>Coupon snapshots</h2>
          <Table
            label="coupon snapshots"
            rows={data.coupons}
            rowKey={(c) => c.coupon_code}
            columns={[
              {
                header: 'coupon',
                cell: (c) => <Link href={`/coupons/${seg(c.coupon_code)}`}>{c.coupon_code}</Link>,
              },
              { header: 'status', cell: (c) => <CouponStatus status={c.status} /> },
              { header: 'realWin', cell: (c) => <Amount value={c.realWin} /> },
              { header: 'transition', cell: (c) => c.transition },
              { header: 'generation', cell: (c) => c.generation },
              { header: 'applied', cell: (c) => (c.applied ? 'yes' : 'history only') },
            ]}
          />
        </>
      )}
    </Screen>
  );
}
