import { useState } from 'react';
import type { ReactNode } from 'react';
import { Link } from 'wouter';
import { api, seg } from '../api';
import {
  Action,
  Amount,
  Badge,
  Facts,
  PagedTable,
  ReasonAction,
  RecordLink,
  RecordScreen,
  Screen,
  SelectField,
  ShortId,
  Table,
  Tabs,
  TextField,
  Time,
  toneOf,
  usePagedGet,
  UtcField,
  WhenLoaded,
} from '../components';
import { duration, isoFromInput } from '../format';
import { useGet } from '../session';
import type { OutboxDetail, OutboxPage, OutboxStatus, PublisherStatus, WalletStatus } from '../types';
import { BulkPanel } from './BulkActions';

const STATUSES = ['parked', 'pending', 'delivered', 'skipped'];

/** The bulk actions on the wallet's parked rows. */
const BULK_KINDS = [
  ['outbox_retry', 'retry (deliver again)'],
  ['outbox_skip', 'skip (settled by hand in the wallet)'],
] as const;

/**
 * An outbox and where it delivers: the wallet (docs/wallet.md) or a publisher of settlement events
 * (docs/events.md). Both have the same endpoints under `path` (`/status` aside), which is also
 * the console route of its screens.
 */
export interface Destination {
  /** API path and console route: `/wallet`, `/events/{publisher}`. */
  path: string;
  /** The API path of its status: an object (wallet) or a list with one entry per publisher. */
  statusPath: string;
  publisher?: string;
  title: string;
  /** Whom it delivers to, inside a sentence. */
  to: string;
  /** Its rows, inside a sentence. */
  rows: string;
  /** The table of a row's attempts (also its accessible name). */
  attempts: string;
  /** What a retried row sends again, and why that is safe. */
  resend: (operationKey: string) => ReactNode;
  /** What a skip means. */
  skipped: string;
}

export const WALLET: Destination = {
  path: '/wallet',
  statusPath: '/wallet/status',
  title: 'Wallet outbox',
  to: 'the wallet',
  rows: 'outbox rows',
  attempts: 'wallet delivery attempts',
  resend: (key) => (
    <>
      the wallet gets the same transaction id <code>{key}</code> and body, so it applies it at most once.
    </>
  ),
  skipped: "is marked settled by hand in the wallet and never delivered; the account's later rows go ahead",
};

/** The settlement events' outbox of publisher `name` (a name of `EVENT_PUBLISHERS`). */
export function publisherDestination(name: string): Destination {
  return {
    path: `/events/${seg(name)}`,
    statusPath: '/events/status',
    publisher: name,
    title: `Settlement events: ${name}`,
    to: `publisher ${name}`,
    rows: 'events',
    attempts: 'publish attempts',
    resend: (key) => (
      <>
        {name} gets the same event id <code>{key}</code> and bytes; consumers de-duplicate by it.
      </>
    ),
    skipped: "is never published; the account's later events go ahead",
  };
}

/** The destination's state: the wallet's, or its publisher's entry of `GET /events/status`. */
function useOutboxStatus(dest: Destination) {
  const got = useGet<WalletStatus | PublisherStatus[]>(dest.statusPath, 10_000);
  const data = Array.isArray(got.data) ? got.data.find((s) => s.publisher === dest.publisher) : got.data;
  const missing = Array.isArray(got.data) && !data;
  return { ...got, data, missing };
}

/**
 * Whether an outbox delivers: paused, running, or (the wallet without `WALLET_CONNECTOR`) no
 * connector, when no row is written, so none is delivered, whatever the pause state.
 */
export function DeliveryState(props: { paused: boolean; noConnector?: boolean; brief?: boolean }) {
  const { paused, noConnector } = props;
  if (noConnector)
    return (
      <>
        <Badge text="no connector" tone="warn" />
        {!props.brief && (
          <span className="muted"> no wallet rows are written or delivered: WALLET_CONNECTOR is none</span>
        )}
      </>
    );
  return paused ? <Badge text="paused" tone="bad" /> : <Badge text="running" tone="ok" />;
}

/** Pause or resume delivery to the destination, with the state it is in. */
function PauseResume({
  dest,
  status,
  onDone,
}: {
  dest: Destination;
  status: OutboxStatus;
  onDone: () => void;
}) {
  if (status.paused)
    return (
      <Action
        label="Resume delivery"
        scope="operate"
        what={
          <p>
            Every replica starts delivering the waiting {dest.rows} to {dest.to} again, oldest first per
            account.
          </p>
        }
        send={() => api<OutboxStatus>(`${dest.path}/resume`, { method: 'POST', body: {} })}
        onDone={onDone}
      />
    );
  return (
    <ReasonAction
      form="pause"
      reasonLabel="Pause reason"
      label="Pause delivery"
      scope="operate"
      danger
      what={(reason) => (
        <p>
          Every replica stops delivering to {dest.to}; settlements keep writing {dest.rows}, which wait until
          resumed.
          {reason && (
            <>
              {' '}
              Reason: <q>{reason}</q>.
            </>
          )}
        </p>
      )}
      send={(reason) =>
        api<OutboxStatus>(`${dest.path}/pause`, { method: 'POST', body: reason ? { reason } : {} })
      }
      onDone={onDone}
    />
  );
}

/**
 * An outbox: its state, pause and resume, the rows by state (`children`: what follows, such as the
 * wallet's bulk actions).
 */
export function OutboxScreen({ dest, children }: { dest: Destination; children?: ReactNode }) {
  const status = useOutboxStatus(dest);
  const [state, setState] = useState('parked');
  const rows = usePagedGet<OutboxPage>(`${dest.path}/outbox`, { status: state });
  return (
    <Screen title={dest.title}>
      <WhenLoaded got={status}>
        {(s) => {
          // The wallet's connector; a publisher has none.
          const connector = 'connector' in s ? s.connector : null;
          return (
            <>
              <Facts
                rows={[
                  dest.publisher
                    ? ['publisher', dest.publisher]
                    : ['connector', connector ?? 'none configured'],
                  [
                    'delivery',
                    <DeliveryState paused={s.paused} noConnector={!dest.publisher && !connector} />,
                  ],
                  ['since', <Time at={s.changedAt} />],
                  [
                    'changed by',
                    s.changedBy ?? (s.paused ? `the receiver (${dest.to} refused our credentials)` : '—'),
                  ],
                  ['reason', s.reason ?? '—'],
                  ['pending', s.pending],
                  ['parked', s.parked],
                  ['oldest pending', duration(s.oldestPendingAgeSeconds)],
                ]}
              />
              <PauseResume
                dest={dest}
                status={s}
                onDone={() => {
                  status.reload();
                  rows.reload();
                }}
              />
            </>
          );
        }}
      </WhenLoaded>
      {status.missing && <p>No publisher {dest.publisher} in EVENT_PUBLISHERS.</p>}
      <h2>Rows</h2>
      <Tabs label="outbox state" value={state} onChange={setState} options={STATUSES} />
      <PagedTable
        list={rows}
        label="outbox rows"
        rowKey={(r) => r.id}
        empty={`No ${state} row.`}
        columns={[
          {
            header: 'id',
            className: 'id',
            cell: (r) => <Link href={`${dest.path}/outbox/${r.id}`}>{r.id}</Link>,
          },
          { header: 'operation key', cell: (r) => <code>{r.operationKey}</code> },
          { header: 'account', cell: (r) => <RecordLink to="accounts" id={r.accountId} /> },
          { header: 'amount', cell: (r) => <Amount value={r.amount} currency={r.currency} /> },
          {
            header: 'state',
            cell: (r) => (
              <>
                <Badge text={r.status} tone={toneOf(r.status)} /> {r.parkedReason ?? ''}
                {r.heldBy && <HeldBy dest={dest} id={r.heldBy} />}
              </>
            ),
          },
          { header: 'attempts', cell: (r) => r.attempts },
          { header: 'last answer', cell: (r) => <code>{r.lastError ?? ''}</code> },
          { header: 'written', cell: (r) => <Time at={r.createdAt} /> },
        ]}
      />
      {children}
    </Screen>
  );
}

/** Why a pending row does not go: its account's earlier row `id` is parked (docs/wallet.md). */
function HeldBy({ dest, id }: { dest: Destination; id: string }) {
  return (
    <span className="held">
      {' '}
      held behind parked row <Link href={`${dest.path}/outbox/${id}`}>{id}</Link> of its account: retry or
      skip that one first
    </span>
  );
}

/** The wallet outbox, with bulk retry and skip of its parked rows. */
export function WalletScreen() {
  const [bulkKind, setBulkKind] = useState<'outbox_retry' | 'outbox_skip'>('outbox_retry');
  const [parkedReason, setParkedReason] = useState('');
  const [accountId, setAccountId] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const filter = {
    ...(parkedReason && { parkedReason }),
    ...(accountId.trim() && { accountId: accountId.trim() }),
    ...(from && { parkedFrom: isoFromInput(from) }),
    ...(to && { parkedTo: isoFromInput(to) }),
  };
  return (
    <OutboxScreen dest={WALLET}>
      <BulkPanel
        kind={bulkKind}
        title="Bulk retry or skip of parked rows"
        filter={filter}
        fields={
          <>
            <SelectField label="Action" value={bulkKind} onChange={setBulkKind} options={BULK_KINDS} />
            <SelectField
              label="Parked because"
              value={parkedReason}
              onChange={setParkedReason}
              options={['refused', 'conflict', 'retry_budget_exhausted']}
              any
            />
            <TextField label="Account" value={accountId} onChange={setAccountId} />
            <UtcField label="Parked from" value={from} onChange={setFrom} />
            <UtcField label="Parked before" value={to} onChange={setTo} />
          </>
        }
      />
    </OutboxScreen>
  );
}

/** Every publisher of settlement events: its state and backlog, each linking to its outbox. */
export function EventsScreen() {
  const publishers = useGet<PublisherStatus[]>('/events/status', 10_000);
  return (
    <RecordScreen title="Settlement events" got={publishers}>
      {(data) =>
        data.length === 0 ? (
          <p>
            No publisher: settlement events are off (<code>EVENT_PUBLISHERS</code> is empty).
          </p>
        ) : (
          <Table
            label="publishers"
            rows={data}
            rowKey={(p) => p.publisher}
            columns={[
              {
                header: 'publisher',
                cell: (p) => <Link href={publisherDestination(p.publisher).path}>{p.publisher}</Link>,
              },
              { header: 'delivery', cell: (p) => <DeliveryState paused={p.paused} /> },
              { header: 'pending', cell: (p) => p.pending },
              { header: 'parked', cell: (p) => p.parked },
              { header: 'oldest pending', cell: (p) => duration(p.oldestPendingAgeSeconds) },
              { header: 'reason', cell: (p) => p.reason ?? '' },
            ]}
          />
        )
      }
    </RecordScreen>
  );
}

/** One outbox row: the operation, every delivery attempt and the exact body; retry or skip. */
export function OutboxRowScreen({ dest, id }: { dest: Destination; id: string }) {
  const row = useGet<OutboxDetail>(`${dest.path}/outbox/${seg(id)}`);
  return (
    <RecordScreen title={dest.publisher ? `${dest.publisher} event row ${id}` : `Outbox row ${id}`} got={row}>
      {(data) => (
        <>
          <Facts
            rows={[
              ['operation key', <code>{data.operationKey}</code>],
              ['type', data.type],
              ['account', <RecordLink to="accounts" id={data.accountId} />],
              ['amount', <Amount value={data.amount} currency={data.currency} />],
              ['coupon', <RecordLink to="coupons" id={data.couponCode} />],
              [
                'state',
                <>
                  <Badge text={data.status} tone={toneOf(data.status)} />
                  {data.heldBy && <HeldBy dest={dest} id={data.heldBy} />}
                </>,
              ],
              ['parked because', data.parkedReason ?? '—'],
              ['attempts', data.attempts],
              ['next attempt', <Time at={data.nextAttemptAt} />],
              ['last answer', data.lastError ?? '—'],
              ['written', <Time at={data.createdAt} />],
              ['delivered', <Time at={data.deliveredAt} />],
              ['parked', <Time at={data.parkedAt} />],
              [
                'retried',
                data.retriedAt ? (
                  <>
                    <Time at={data.retriedAt} /> by {data.retriedBy}
                  </>
                ) : (
                  '—'
                ),
              ],
              [
                'skipped',
                data.skippedAt ? (
                  <>
                    <Time at={data.skippedAt} /> by {data.skippedBy}: {data.skipReason}
                  </>
                ) : (
                  '—'
                ),
              ],
            ]}
          />
          <div className="actions-row">
            <Action
              label="Retry"
              scope="operate"
              blocked={data.status === 'parked' ? undefined : 'only a parked row can be retried'}
              what={
                <p>
                  Row {data.id} becomes pending again, due at once, with a new retry budget;{' '}
                  {dest.resend(data.operationKey)}
                </p>
              }
              send={() => api<OutboxDetail>(`${dest.path}/outbox/${seg(id)}/retry`, { method: 'POST' })}
              onDone={row.reload}
            />
          </div>
          {(data.status === 'parked' || data.status === 'pending') && (
            <ReasonAction
              form="skip"
              reasonLabel="Skip reason"
              required
              label="Skip"
              scope="operate"
              danger
              what={(reason) => (
                <p>
                  Row {data.id} (<Amount value={data.amount} currency={data.currency} /> to {data.accountId}){' '}
                  {dest.skipped}. Reason: <q>{reason}</q>.
                </p>
              )}
              send={(reason) =>
                api<OutboxDetail>(`${dest.path}/outbox/${seg(id)}/skip`, { method: 'POST', body: { reason } })
              }
              onDone={row.reload}
            />
          )}
          <h2>Delivery attempts</h2>
          <Table
            label={dest.attempts}
            rows={data.deliveryAttempts}
            rowKey={(a) => a.attempt}
            columns={[
              { header: '#', cell: (a) => a.attempt },
              { header: 'started', cell: (a) => <Time at={a.startedAt} /> },
              { header: 'connector', cell: (a) => a.connector },
              { header: 'outcome', cell: (a) => <Badge text={a.outcome} tone={toneOf(a.outcome)} /> },
              { header: 'HTTP', cell: (a) => a.httpStatus ?? '—' },
              { header: 'answer', cell: (a) => <code>{a.answer ?? ''}</code> },
              { header: 'ms', cell: (a) => a.durationMs },
              { header: 'request id', cell: (a) => <ShortId value={a.requestId} search /> },
              { header: 'trace id', cell: (a) => <ShortId value={a.traceId} /> },
            ]}
          />
          <h2>Body sent</h2>
          <pre className="body" tabIndex={0}>
            {data.body ?? '(none recorded yet)'}
          </pre>
        </>
      )}
    </RecordScreen>
  );
}
