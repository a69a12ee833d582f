import { useState } from 'react';
import { Link } from 'wouter';
import { api, query, seg } from '../api';
import {
  Action,
  Amount,
  Badge,
  Facts,
  Field,
  Loading,
  Pager,
  Screen,
  Time,
  toneOf,
  usePager,
  UtcField,
} from '../components';
import { duration, isoFromInput } from '../format';
import { useGet } from '../session';
import type { OutboxDetail, OutboxRow, Page, WalletStatus } from '../types';
import { BulkPanel } from './BulkActions';

const STATUSES = ['parked', 'pending', 'delivered', 'skipped'];

/** Pause or resume delivery to the wallet, with the state it is in. */
function PauseResume({ status, onDone }: { status: WalletStatus; onDone: () => void }) {
  const [reason, setReason] = useState('');
  if (status.paused)
    return (
      <Action
        label="Resume delivery"
        scope="operate"
        what={
          <p>
            Every replica starts delivering the waiting outbox rows to the wallet again, oldest first per
            account.
          </p>
        }
        send={() => api<WalletStatus>('/wallet/resume', { method: 'POST', body: {} })}
        onDone={onDone}
      />
    );
  return (
    <form className="form inline" onSubmit={(e) => e.preventDefault()} aria-label="pause">
      <Field label="Pause reason">
        {(id) => <input id={id} value={reason} onChange={(e) => setReason(e.target.value)} />}
      </Field>
      <Action
        label="Pause delivery"
        scope="operate"
        danger
        what={
          <p>
            Every replica stops delivering to the wallet; settlements keep writing outbox rows, which wait
            until resumed.
            {reason.trim() && (
              <>
                {' '}
                Reason: <q>{reason.trim()}</q>.
              </>
            )}
          </p>
        }
        send={() =>
          api<WalletStatus>('/wallet/pause', {
            method: 'POST',
            body: reason.trim() ? { reason: reason.trim() } : {},
          })
        }
        onDone={onDone}
      />
    </form>
  );
}

/** The wallet outbox: its state, pause and resume, the rows by state, bulk retry and skip. */
export function WalletScreen() {
  const status = useGet<WalletStatus>('/wallet/status', 10_000);
  const pager = usePager();
  const [state, setState] = useState('parked');
  const rows = useGet<Page<OutboxRow>>(
    `/wallet/outbox${query({ status: state, cursor: pager.cursor, limit: 50 })}`,
  );
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
  const s = status.data;
  return (
    <Screen title="Wallet outbox">
      <Loading loading={status.loading && !s} error={status.error} />
      {s && (
        <>
          <Facts
            rows={[
              ['connector', s.connector ?? 'none configured'],
              [
                'delivery',
                s.paused ? <Badge text="paused" tone="bad" /> : <Badge text="running" tone="ok" />,
              ],
              ['since', <Time at={s.changedAt} />],
              ['changed by', s.changedBy ?? (s.paused ? 'the receiver (wallet refused the key)' : '—')],
              ['reason', s.reason ?? '—'],
              ['pending', s.pending],
              ['parked', s.parked],
              ['oldest pending', duration(s.oldestPendingAgeSeconds)],
            ]}
          />
          <PauseResume
            status={s}
            onDone={() => {
              status.reload();
              rows.reload();
            }}
          />
        </>
      )}
      <h2>Rows</h2>
      <div className="filters" role="group" aria-label="outbox state">
        {STATUSES.map((st) => (
          <button
            key={st}
            type="button"
            aria-pressed={state === st}
            onClick={() => {
              pager.reset();
              setState(st);
            }}
          >
            {st}
          </button>
        ))}
      </div>
      <Loading loading={rows.loading && !rows.data} error={rows.error} />
      {rows.data && (
        <>
          <table aria-label="outbox rows">
            <thead>
              <tr>
                <th scope="col">id</th>
                <th scope="col">operation key</th>
                <th scope="col">account</th>
                <th scope="col">amount</th>
                <th scope="col">state</th>
                <th scope="col">attempts</th>
                <th scope="col">last answer</th>
                <th scope="col">written</th>
              </tr>
            </thead>
            <tbody>
              {rows.data.items.map((r) => (
                <tr key={r.id}>
                  <td>
                    <Link href={`/wallet/outbox/${r.id}`}>{r.id}</Link>
                  </td>
                  <td>
                    <code>{r.operationKey}</code>
                  </td>
                  <td>
                    <Link href={`/accounts/${seg(r.accountId)}`}>{r.accountId}</Link>
                  </td>
                  <td>
                    <Amount value={r.amount} currency={r.currency} />
                  </td>
                  <td>
                    <Badge text={r.status} tone={toneOf(r.status)} /> {r.parkedReason ?? ''}
                  </td>
                  <td>{r.attempts}</td>
                  <td>
                    <code>{r.lastError ?? ''}</code>
                  </td>
                  <td>
                    <Time at={r.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {rows.data.items.length === 0 && <p>No {state} row.</p>}
          <Pager pager={pager} nextCursor={rows.data.nextCursor} />
        </>
      )}
      <BulkPanel
        kind={bulkKind}
        title="Bulk retry or skip of parked rows"
        filter={filter}
        fields={
          <>
            <Field label="Action">
              {(id) => (
                <select
                  id={id}
                  value={bulkKind}
                  onChange={(e) => setBulkKind(e.target.value as 'outbox_retry' | 'outbox_skip')}
                >
                  <option value="outbox_retry">retry (deliver again)</option>
                  <option value="outbox_skip">skip (settled by hand in the wallet)</option>
                </select>
              )}
            </Field>
            <Field label="Parked because">
              {(id) => (
                <select id={id} value={parkedReason} onChange={(e) => setParkedReason(e.target.value)}>
                  <option value="">any</option>
                  <option>refused</option>
                  <option>conflict</option>
                  <option>retry_budget_exhausted</option>
                </select>
              )}
            </Field>
            <Field label="Account">
              {(id) => <input id={id} value={accountId} onChange={(e) => setAccountId(e.target.value)} />}
            </Field>
            <UtcField label="Parked from" value={from} onChange={setFrom} />
            <UtcField label="Parked before" value={to} onChange={setTo} />
          </>
        }
      />
    </Screen>
  );
}

/** One outbox row: the operation, every delivery attempt and the exact body; retry or skip. */
export function OutboxRowScreen({ id }: { id: string }) {
  const { data, error, loading, reload } = useGet<OutboxDetail>(`/wallet/outbox/${seg(id)}`);
  const [skipReason, setSkipReason] = useState('');
  return (
    <Screen title={<>Outbox row {id}</>}>
      <Loading loading={loading && !data} error={error} />
      {data && (
        <>
          <Facts
            rows={[
              ['operation key', <code>{data.operationKey}</code>],
              ['type', data.type],
              ['account', <Link href={`/accounts/${seg(data.accountId)}`}>{data.accountId}</Link>],
              ['amount', <Amount value={data.amount} currency={data.currency} />],
              [
                'coupon',
                data.couponCode ? (
                  <Link href={`/coupons/${seg(data.couponCode)}`}>{data.couponCode}</Link>
                ) : (
                  '—'
                ),
              ],
              ['state', <Badge text={data.status} tone={toneOf(data.status)} />],
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
                  Row {data.id} becomes pending again, due at once, with a new retry budget; the wallet gets
                  the same transaction id <code>{data.operationKey}</code> and body, so it applies it at most
                  once.
                </p>
              }
              send={() => api<OutboxDetail>(`/wallet/outbox/${seg(id)}/retry`, { method: 'POST' })}
              onDone={reload}
            />
          </div>
          {(data.status === 'parked' || data.status === 'pending') && (
            <form className="form inline" onSubmit={(e) => e.preventDefault()} aria-label="skip">
              <Field label="Skip reason">
                {(fid) => (
                  <input id={fid} value={skipReason} onChange={(e) => setSkipReason(e.target.value)} />
                )}
              </Field>
              <Action
                label="Skip"
                scope="operate"
                danger
                blocked={skipReason.trim() ? undefined : 'enter a reason'}
                what={
                  <p>
                    Row {data.id} (<Amount value={data.amount} currency={data.currency} /> to {data.accountId}
                    ) is marked settled by hand in the wallet and never delivered; the account's later rows go
                    ahead. Reason: <q>{skipReason.trim()}</q>.
                  </p>
                }
                send={() =>
                  api<OutboxDetail>(`/wallet/outbox/${seg(id)}/skip`, {
                    method: 'POST',
                    body: { reason: skipReason.trim() },
                  })
                }
                onDone={reload}
              />
            </form>
          )}
          <h2>Delivery attempts</h2>
          <table aria-label="wallet delivery attempts">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">started</th>
                <th scope="col">connector</th>
                <th scope="col">outcome</th>
                <th scope="col">HTTP</th>
                <th scope="col">answer</th>
                <th scope="col">ms</th>
                <th scope="col">request id</th>
              </tr>
            </thead>
            <tbody>
              {data.deliveryAttempts.map((a) => (
                <tr key={a.attempt}>
                  <td>{a.attempt}</td>
                  <td>
                    <Time at={a.startedAt} />
                  </td>
                  <td>{a.connector}</td>
                  <td>
                    <Badge text={a.outcome} tone={toneOf(a.outcome)} />
                  </td>
                  <td>{a.httpStatus ?? '—'}</td>
                  <td>
                    <code>{a.answer ?? ''}</code>
                  </td>
                  <td>{a.durationMs}</td>
                  <td>
                    <code>{a.requestId}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Body sent</h2>
          <pre className="body" tabIndex={0}>
            {data.body ?? '(none recorded yet)'}
          </pre>
        </>
      )}
    </Screen>
  );
}
