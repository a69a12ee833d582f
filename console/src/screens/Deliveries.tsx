import { useState } from 'react';
import {
  Amount,
  Badge,
  CouponStatus,
  Facts,
  Form,
  PagedTable,
  RecordLink,
  RecordScreen,
  Screen,
  SelectField,
  ShortId,
  Table,
  TextField,
  Time,
  toneOf,
  usePagedGet,
} from '../components';
import type { Column } from '../components';
import { seg } from '../api';
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

/** The columns of delivery attempts (the list's, with their batch, and a batch's). */
function attemptColumns(withBatch: boolean): Column<DeliveryAttempt>[] {
  return [
    { header: 'received', cell: (a) => <Time at={a.receivedAt} /> },
    ...(withBatch
      ? [
          {
            header: 'batch',
            cell: (a: DeliveryAttempt) => <RecordLink to="batches" id={a.batchId} none={noBatch(a)} />,
          },
        ]
      : []),
    { header: 'outcome', cell: (a) => <Badge text={a.outcome} tone={toneOf(a.outcome)} /> },
    { header: 'HTTP', cell: (a) => a.httpStatus },
    { header: 'error', cell: (a) => a.errorCode ?? '' },
    { header: 'coupons', cell: (a) => a.couponCount ?? '' },
    { header: 'ms', cell: (a) => a.durationMs },
    { header: 'payload hash', cell: (a) => <ShortId value={a.payloadHash} length={12} /> },
    { header: 'request id', cell: (a) => <ShortId value={a.requestId} search none="" /> },
    { header: 'trace id', cell: (a) => <ShortId value={a.traceId} /> },
    { header: 'by', cell: (a) => a.actor ?? 'SportAPI' },
  ];
}

/** Every delivery attempt of the callback, newest first, by outcome and batch. */
export function DeliveriesScreen() {
  const [outcome, setOutcome] = useState('');
  const [batchId, setBatchId] = useState('');
  const deliveries = usePagedGet<DeliveryPage>('/callbacks/deliveries', { outcome, batchId: batchId.trim() });
  return (
    <Screen title="Batches and deliveries" refresh={deliveries.reload}>
      <Form inline label="filter deliveries">
        <SelectField label="Outcome" value={outcome} onChange={setOutcome} options={OUTCOMES} any />
        <TextField label="Batch id" value={batchId} onChange={setBatchId} />
      </Form>
      <PagedTable
        list={deliveries}
        label="delivery attempts"
        rowKey={(a) => a.id}
        empty="No delivery attempt matches."
        columns={attemptColumns(true)}
      />
    </Screen>
  );
}

/**
 * A batch: whether it committed, what its coupons did, the financial operations it posted (once)
 * and every delivery attempt: the proof that a redelivery was answered as a duplicate and not paid.
 */
export function BatchScreen({ batchId }: { batchId: string }) {
  const batch = useGet<BatchAudit>(`/callbacks/batches/${seg(batchId)}`);
  return (
    <RecordScreen title={<>Batch {batchId}</>} got={batch}>
      {(data) => {
        const duplicates = data.deliveries.filter((d) => d.outcome === 'duplicate').length;
        return (
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
            <Table
              label="delivery attempts"
              rows={data.deliveries}
              rowKey={(a) => a.id}
              columns={attemptColumns(false)}
            />
            <h2>Financial operations posted</h2>
            <Table
              label="operations posted"
              rows={data.operations}
              rowKey={(o) => o.key}
              empty="No financial operation."
              columns={[
                { header: 'operation key', cell: (o) => <code>{o.key}</code> },
                { header: 'type', cell: (o) => o.type },
                { header: 'coupon', cell: (o) => <RecordLink to="coupons" id={o.couponCode} /> },
                { header: 'account', cell: (o) => <RecordLink to="accounts" id={o.accountId} /> },
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
                { header: 'coupon', cell: (c) => <RecordLink to="coupons" id={c.coupon_code} /> },
                { header: 'status', cell: (c) => <CouponStatus status={c.status} /> },
                { header: 'realWin', cell: (c) => <Amount value={c.realWin} /> },
                { header: 'transition', cell: (c) => c.transition },
                { header: 'generation', cell: (c) => c.generation },
                { header: 'applied', cell: (c) => (c.applied ? 'yes' : 'history only') },
              ]}
            />
          </>
        );
      }}
    </RecordScreen>
  );
}
