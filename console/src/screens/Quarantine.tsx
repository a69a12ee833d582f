import { useState } from 'react';
import { Link } from 'wouter';
import { api, seg } from '../api';
import {
  Action,
  Badge,
  Facts,
  Json,
  PagedTable,
  RecordLink,
  RecordScreen,
  Screen,
  Tabs,
  TextField,
  Time,
  toneOf,
  usePagedGet,
  UtcField,
} from '../components';
import { hexDump, isoFromInput } from '../format';
import { useGet } from '../session';
import type { QuarantineDetail, QuarantinePage } from '../types';
import { BulkPanel } from './BulkActions';

/** The ways to show a body. */
const BODY_VIEWS = [
  ['text', 'Text (UTF-8)'],
  ['hex', 'Hex'],
] as const;

/** The quarantine: kept bodies newest first, and the bulk replay of those a filter matches. */
export function QuarantineScreen() {
  const bodies = usePagedGet<QuarantinePage>('/callbacks/quarantine');
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
    <Screen title="Quarantine" refresh={bodies.reload}>
      <p className="muted">
        Signed callback bodies refused with 400 or 409, and inbox batches that kept failing, kept byte for
        byte. Replay one once the cause is fixed; a replay is safe to repeat (the batch id is applied once).
      </p>
      <PagedTable
        list={bodies}
        label="quarantined bodies"
        rowKey={(q) => q.id}
        empty="The quarantine is empty."
        columns={[
          {
            header: 'id',
            className: 'id',
            cell: (q) => <Link href={`/quarantine/${q.id}`}>{q.id}</Link>,
          },
          { header: 'received', cell: (q) => <Time at={q.receivedAt} /> },
          { header: 'batch', cell: (q) => <RecordLink to="batches" id={q.batchId} /> },
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
      <BulkPanel
        kind="quarantine_replay"
        title="Bulk replay"
        filter={filter}
        fields={
          <>
            <TextField
              label="Refusal (reason)"
              hint="e.g. validation_failed, batch_conflict, apply_failed; empty: any"
              value={reason}
              onChange={(v) => setReason(v.trim())}
            />
            <TextField label="Batch id starts with" value={prefix} onChange={setPrefix} />
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
  const entry = useGet<QuarantineDetail>(`/callbacks/quarantine/${seg(id)}`);
  const [view, setView] = useState<(typeof BODY_VIEWS)[number][0]>('text');
  return (
    <RecordScreen title={<>Quarantined body {id}</>} got={entry}>
      {(data) => (
        <>
          <Facts
            rows={[
              ['received', <Time at={data.receivedAt} />],
              ['batch', <RecordLink to="batches" id={data.batchId} />],
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
            onDone={entry.reload}
          />
          <h2>Body</h2>
          <Tabs label="body view" value={view} onChange={setView} options={BODY_VIEWS} />
          <pre className="body" aria-label={view === 'text' ? 'body as text' : 'body as hex'} tabIndex={0}>
            {view === 'text' ? data.body : hexDump(data.bodyBase64)}
          </pre>
        </>
      )}
    </RecordScreen>
  );
}
