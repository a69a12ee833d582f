import { useState } from 'react';
import { Link, useLocation, useSearch } from 'wouter';
import { api, seg } from '../api';
import {
  Action,
  Amount,
  idempotencyKey,
  Badge,
  CouponStatus,
  Facts,
  Form,
  Json,
  PagedTable,
  RecordLink,
  RecordScreen,
  Screen,
  Table,
  Tabs,
  TextField,
  Time,
  toneOf,
  usePagedGet,
} from '../components';
import { useGet, useSession } from '../session';
import type { Coupon, CouponPage, Resolution, SnapshotPage } from '../types';

/** The coupons' tabs, and the list each opens. */
const TABS = [
  ['review', 'Needs review'],
  ['unallocated', 'Unallocated'],
  ['all', 'Not flagged'],
] as const;
const TAB_PATHS: Record<(typeof TABS)[number][0], string> = {
  review: '/coupons?needsReview=true',
  unallocated: '/coupons?unallocated=true',
  all: '/coupons?needsReview=false',
};

/** Coupons, most recently changed first: the flagged and unallocated ones by default. */
export function CouponsScreen() {
  const params = new URLSearchParams(useSearch());
  const [, navigate] = useLocation();
  const needsReview = params.get('needsReview') ?? (params.get('unallocated') ? '' : 'true');
  const unallocated = params.get('unallocated') ?? '';
  const reviewReason = params.get('reviewReason') ?? '';
  const coupons = usePagedGet<CouponPage>('/coupons', { needsReview, unallocated, reviewReason });
  const which = unallocated === 'true' ? 'unallocated' : needsReview === 'true' ? 'review' : 'all';
  return (
    <Screen title="Coupons">
      <Tabs label="which coupons" value={which} onChange={(tab) => navigate(TAB_PATHS[tab])} options={TABS}>
        {reviewReason && (
          <span>
            reason <Badge text={reviewReason} /> <Link href="/coupons?needsReview=true">all reasons</Link>
          </span>
        )}
      </Tabs>
      <PagedTable
        list={coupons}
        rowKey={(c) => c.coupon_code}
        empty="No coupon here."
        columns={[
          { header: 'coupon', cell: (c) => <RecordLink to="coupons" id={c.coupon_code} /> },
          {
            header: 'account',
            cell: (c) => <RecordLink to="accounts" id={c.accountId} none="unallocated" />,
          },
          { header: 'stake', cell: (c) => <Amount value={c.stake} currency={c.currency} /> },
          { header: 'status', cell: (c) => <CouponStatus status={c.status} /> },
          { header: 'realWin', cell: (c) => <Amount value={c.realWin} currency={c.currency} /> },
          {
            header: 'flag',
            cell: (c) =>
              c.needsReview ? (
                <Badge text={c.reviewReason ?? 'needs review'} tone="bad" />
              ) : c.unallocated ? (
                <Badge text="unallocated" tone="warn" />
              ) : (
                ''
              ),
          },
          { header: 'changed', cell: (c) => <Time at={c.updatedAt} /> },
        ]}
      />
    </Screen>
  );
}

/** The resolution form of a flagged coupon: amount, reason, who; confirmed, then sent once. */
function ResolveForm({ coupon, onDone }: { coupon: Coupon; onDone: () => void }) {
  const { who } = useSession();
  const [realWin, setRealWin] = useState('');
  const [reason, setReason] = useState('');
  const [resolvedBy, setResolvedBy] = useState(who.name);
  // One Idempotency-Key per filled-in form: a second click sends the same key, applied once.
  const [key] = useState(idempotencyKey);
  const [resolved, setResolved] = useState(false);
  const blocked = resolved
    ? 'resolved: see the answer'
    : !realWin.trim()
      ? 'enter the amount'
      : !reason.trim()
        ? 'enter a reason'
        : !resolvedBy.trim()
          ? 'say who resolves it'
          : undefined;
  return (
    <Form label="resolve">
      <TextField
        label={`realWin (${coupon.currency ?? 'currency'}; 0 for a loss)`}
        hint="credited for the result, stake included"
        inputMode="decimal"
        value={realWin}
        onChange={setRealWin}
      />
      <TextField label="Reason" value={reason} onChange={setReason} />
      <TextField label="Resolved by" value={resolvedBy} onChange={setResolvedBy} />
      <Action
        label="Resolve"
        scope="operate"
        blocked={blocked}
        what={
          <>
            <p>
              Coupon <strong>{coupon.coupon_code}</strong> is settled by hand at realWin{' '}
              <strong>
                <Amount value={realWin.trim()} currency={coupon.currency} />
              </strong>
              . A settled generation with another amount becomes a new generation: its credit is taken back
              and the new amount credited, once.
            </p>
            <p>
              Reason: <q>{reason}</q>, by {resolvedBy}, recorded with key {who.name}.
            </p>
          </>
        }
        send={() =>
          api<{ resolution: Resolution; coupon: Coupon }>(`/coupons/${seg(coupon.coupon_code)}/resolution`, {
            method: 'POST',
            headers: { 'idempotency-key': key },
            body: { realWin: realWin.trim(), reason: reason.trim(), resolvedBy: resolvedBy.trim() },
          })
        }
        onDone={() => {
          setResolved(true);
          onDone();
        }}
      />
    </Form>
  );
}

/** A coupon: its state, bets, operations and every snapshot; reconcile now, resolve by hand. */
export function CouponScreen({ code }: { code: string }) {
  const coupon = useGet<Coupon>(`/coupons/${seg(code)}`);
  const history = usePagedGet<SnapshotPage>(`/coupons/${seg(code)}/history`, {}, { limit: 20 });
  const reload = () => {
    coupon.reload();
    history.reload();
  };
  const { who } = useSession();
  // The form stays once shown, so its answer stays on screen after the flag is gone.
  const [resolving, setResolving] = useState(false);
  if (coupon.data?.needsReview && !resolving) setResolving(true);
  return (
    <RecordScreen title={<>Coupon {code}</>} got={coupon}>
      {(c) => (
        <>
          <Facts
            rows={[
              ['account', <RecordLink to="accounts" id={c.accountId} none="unallocated" />],
              ['stake', <Amount value={c.stake} currency={c.currency} />],
              ['status', <CouponStatus status={c.status} none="no callback yet" />],
              ['realWin', <Amount value={c.realWin} currency={c.currency} />],
              ['settlement generation', c.settlementGeneration],
              ['settled', c.settled ? 'yes' : 'no'],
              ['recalculation open', c.recalculationOpen ? 'yes' : 'no'],
              ['needs review', c.needsReview ? <Badge text={c.reviewReason ?? 'yes'} tone="bad" /> : 'no'],
              ['registered by', c.registeredBy ?? '—'],
            ]}
          />
          <div className="actions-row">
            {who.receiver.polling ? (
              <Action
                label="Reconcile now"
                scope="operate"
                what={
                  <p>
                    The receiver reads coupon <strong>{c.coupon_code}</strong> from SportAPI now and applies
                    it like a callback (a synthetic batch <code>poll:…</code>). SportAPI's answer is
                    authoritative: it may settle the coupon again as a new generation.
                  </p>
                }
                send={() => api<Coupon>(`/coupons/${seg(c.coupon_code)}/reconcile`, { method: 'POST' })}
                onDone={reload}
              />
            ) : (
              <p className="muted" role="note" aria-label="reconcile">
                No <strong>Reconcile now</strong>: SportAPI polling is off on this receiver (
                <code>SPORTAPI_BASE_URL</code> is not set), so it cannot read coupons from SportAPI. A flagged
                coupon is resolved by hand (<strong>Resolve</strong>).
              </p>
            )}
          </div>
          {resolving && (
            <section>
              <h2>Resolve</h2>
              <ResolveForm coupon={c} onDone={reload} />
            </section>
          )}
          <section>
            <h2>Operations</h2>
            <Table
              label="operations"
              rows={c.operations}
              rowKey={(o) => o.key}
              columns={[
                { header: 'operation key', cell: (o) => <code>{o.key}</code> },
                { header: 'type', cell: (o) => o.type },
                { header: 'generation', cell: (o) => o.generation ?? '—' },
                { header: 'amount', cell: (o) => <Amount value={o.amount} currency={c.currency} /> },
              ]}
            />
          </section>
          <section>
            <h2>Bets</h2>
            <Table
              label="bets"
              rows={c.events}
              rowKey={(e, i) => String(e.uuid ?? i)}
              columns={[
                { header: 'uuid', cell: (e) => <code>{String(e.uuid)}</code> },
                { header: 'status', cell: (e) => String(e.status) },
                { header: 'as sent', cell: (e) => <Json value={e} /> },
              ]}
            />
          </section>
          <section>
            <h2>Snapshots</h2>
            {/* Amounts need the coupon's currency: the snapshots show once the coupon is there, so
                never a bare amount first and the same amount with its currency a moment later. */}
            <PagedTable
              list={history}
              label="snapshots"
              rowKey={(s) => s.id}
              columns={[
                { header: 'received', cell: (s) => <Time at={s.receivedAt} /> },
                {
                  header: 'batch',
                  cell: (s) => (
                    <>
                      <RecordLink to="batches" id={s.batchId} />
                      {s.actor && <span className="muted"> by {s.actor}</span>}
                    </>
                  ),
                },
                { header: 'status', cell: (s) => <CouponStatus status={s.status} /> },
                { header: 'realWin', cell: (s) => <Amount value={s.realWin} currency={c.currency} /> },
                {
                  header: 'transition',
                  cell: (s) => (
                    <Badge
                      text={s.transition}
                      tone={s.applied ? 'ok' : toneOf(s.transition) === 'ok' ? undefined : 'warn'}
                    />
                  ),
                },
                { header: 'gen.', cell: (s) => s.generation },
                { header: 'applied', cell: (s) => (s.applied ? 'yes' : 'history only') },
                {
                  header: 'operations posted',
                  cell: (s) =>
                    s.operations.length === 0
                      ? 'none'
                      : s.operations.map((o) => (
                          <div key={o.key}>
                            <code>{o.key}</code> <Amount value={o.amount} currency={c.currency} />
                          </div>
                        )),
                },
              ]}
            />
          </section>
        </>
      )}
    </RecordScreen>
  );
}
