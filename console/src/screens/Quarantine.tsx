import { useState } from 'react';
import { Link } from 'wouter';
import { api, query, seg } from '../api';
import {
  Action,
  Badge,
  Facts,
  Field,
  Json,
  Loading,
  Pager,
  Screen,
  Table,
  Time,
  toneOf,
  usePager,
  UtcField,
} from '../components';
import { hexDump, isoFromInput } from '../format';
import { useGet } from '../session';
import type { QuarantineDetail, QuarantinePage } from '../types';
import { BulkPanel } from './BulkActions';

/** The quarantine: kept bodies newest first, and the bulk replay of those a filter matches. */
export function QuarantineScreen() {
  const pager = usePager();
  const { data, error, loading, reload } = useGet<QuarantinePage>(
    `/callbacks/quarantine${query({ cursor: pager.cursor, limit: 50 })}`,
  );
  const [reason, setReason] = useState('');
  const [prefix, setPrefix] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [notReplayed, setNotReplayed] = useState(true);
  const filter = {
    ...(reason && { quarantineReason: reason }),
    ...(prefix && { batchIdPrefix: prefix }),
    ...(from && { receivedFrom: isoFromInput(from) }),
    ...(to && { receivedTo: isoFromInput(to) }),
    notReplayed,
  };
  return (
    <Screen
      title="Quarantine"
      actions={
        <button type="button" onClick={reload}>
          Refresh
        </button>
      }
    >
      <p className="muted">
        Signed callback bodies refused with 400 or 409, and inbox batches that kept failing, kept byte for
        byte. Replay one once the cause is fixed; a replay is safe to repeat (the batch id is applied once).
      </p>
      <Loading loading={loading && !data} error={error} />
      {data && (
        <>
          <Table
            label="quarantined bodies"
            rows={data.items}
            rowKey={(q) => q.id}
            empty="The quarantine is empty."
            columns={[
              {
                header: 'id',
                className: 'id',
                cell: (q) => <Link href={`/quarantine/${q.id}`}>{q.id}</Link>,
              },
              { header: 'received', cell: (q) => <Time at={q.receivedAt} /> },
              {
                header: 'batch',
                cell: (q) => (q.batchId ? <Link href={`/batches/${seg(q.batchId)}`}>{q.batchId}</Link> : '—'),
              },
              { header: 'reason', cell: (q) => <Badge text={q.reason} tone="bad" /> },
              { header: 'bytes', cell: (q) => q.bodyBytes },
              {
                header: 'body (first bytes)',
                className: 'preview',
                cell: (q) => <code>{q.bodyPreview}</code>,
              },
              {
                header: 'replayed',
                cell: (q) =>
                  q.replayOutcome ? (
                    <>
                      <Badge text={q.replayOutcome} tone={toneOf(q.replayOutcome)} /> ×{q.replayCount}
                    </>
                  ) : (
                    'no'
                  ),
              },
            ]}
          />
          <Pager pager={pager} nextCursor={data.nextCursor} />
        </>
      )}
      <BulkPanel
        kind="quarantine_replay"
        title="Bulk replay"
        filter={filter}
        fields={
          <>
            <Field
              label="Refusal (reason)"
              hint="e.g. validation_failed, batch_conflict, apply_failed; empty: any"
            >
              {(id) => <input id={id} value={reason} onChange={(e) => setReason(e.target.value.trim())} />}
            </Field>
            <Field label="Batch id starts with">
              {(id) => <input id={id} value={prefix} onChange={(e) => setPrefix(e.target.value)} />}
            </Field>
            <UtcField label="Received from" value={from} onChange={setFrom} />
            <UtcField label="Received before" value={to} onChange={setTo} />
            <div className="field checkbox">
              <input
                id="not-replayed"
                type="checkbox"
                checked={notReplayed}
                onChange={(e) => setNotReplayed(e.target.checked)}
              />
              <label htmlFor="not-replayed">Only bodies never replayed</label>
            </div>
          </>
        }
      />
    </Screen>
  );
}

/** One quarantined body: why, its bytes as text and hex, and replay. */
export function QuarantineEntryScreen({ id }: { id: string }) {
  const { data, error, loading, reload } = useGet<QuarantineDetail>(`/callbacks/quarantine/${seg(id)}`);
  const [view, setView] = useState<'text' | 'hex'>('text');
  return (
    <Screen title={<>Quarantined body {id}</>}>
      <Loading loading={loading && !data} error={error} />
      {data && (
        <>
          <Facts
            rows={[
              ['received', <Time at={data.receivedAt} />],
              [
                'batch',
                data.batchId ? <Link href={`/batches/${seg(data.batchId)}`}>{data.batchId}</Link> : '—',
              ],
              ['reason', <Badge text={data.reason} tone="bad" />],
              ['answered', data.httpStatus],
              ['content type', data.contentType ?? '—'],
              ['bytes', data.bodyBytes],
              ['payload hash', <code>{data.payloadHash}</code>],
              ['inbox row', data.inboxId ?? '—'],
              [
                'replays',
                data.replayCount === 0 ? (
                  'none'
                ) : (
                  <>
                    {data.replayCount}, last{' '}
                    <Badge text={data.replayOutcome ?? ''} tone={toneOf(data.replayOutcome)} /> at{' '}
                    <Time at={data.replayedAt} /> by {data.replayedBy ?? '—'}
                  </>
                ),
              ],
            ]}
          />
          <h2>Why</h2>
          <Json value={data.details} label="details" />
          <Action
            label="Replay"
            scope="operate"
            what={
              <p>
                The stored bytes go through the pipeline again (parse, validate, apply in one transaction). If
                batch <strong>{data.batchId ?? '(no id)'}</strong> was applied before, the answer is{' '}
                <code>duplicate</code> and no money moves.
              </p>
            }
            send={() => api(`/callbacks/quarantine/${seg(id)}/replay`, { method: 'POST' })}
            onDone={reload}
          />
          <h2>Body</h2>
          <div className="filters" role="group" aria-label="body view">
            <button type="button" aria-pressed={view === 'text'} onClick={() => setView('text')}>
              Text (UTF-8)
            </button>
            <button type="button" aria-pressed={view === 'hex'} onClick={() => setView('hex')}>
              Hex
            </button>
          </div>
          <pre className="body" aria-label={view === 'text' ? 'body as text' : 'body as hex'} tabIndex={0}>
            {view === 'text' ? data.body : hexDump(data.bodyBase64)}
          </pre>
        </>
      )}
    </Screen>
  );
}
