import { useState } from 'react';
import type { ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { api, ApiError, asApiError } from '../api';
import {
  Action,
  Badge,
  ErrorNote,
  Facts,
  Form,
  PagedTable,
  Screen,
  ScopedButton,
  Tabs,
  TextField,
  Time,
  toneOf,
  usePagedGet,
} from '../components';
import type { BulkAction, BulkActionPage, BulkDetail, BulkKind, BulkPlan } from '../types';

const KIND_TEXT: Record<BulkKind, string> = {
  quarantine_replay: 'replay quarantined bodies',
  outbox_retry: 'retry parked outbox rows',
  outbox_skip: 'skip parked outbox rows',
};

/** The screen of a bulk action's target row. */
const targetHref = (kind: BulkKind | undefined, id: string) =>
  kind === 'quarantine_replay' ? `/quarantine/${id}` : `/wallet/outbox/${id}`;

/**
 * A bulk action in three steps (docs/api.md#bulk-actions): count the rows a filter matches (the
 * plan, touching nothing), then run it with a reason and a cap after a confirmation, then watch
 * it on its own screen. `filter` is the filter built by the caller's fields (`fields`).
 */
export function BulkPanel(props: {
  kind: BulkKind;
  filter: Record<string, unknown>;
  fields: ReactNode;
  title: string;
}) {
  const [, navigate] = useLocation();
  const [plan, setPlan] = useState<{ plan: BulkPlan; of: string } | null>(null);
  const [planError, setPlanError] = useState<ApiError | undefined>();
  const [reason, setReason] = useState('');
  const [cap, setCap] = useState('1000');
  const capNumber = /^\d{1,5}$/.test(cap) ? Number(cap) : NaN;
  // A plan stands for the filter and cap it counted: change either and it needs a new count.
  const asked = JSON.stringify([props.kind, props.filter, capNumber]);
  const count = async () => {
    setPlan(null);
    setPlanError(undefined);
    try {
      const answer = await api<BulkPlan>('/bulk-actions/plan', {
        method: 'POST',
        body: { kind: props.kind, filter: props.filter, cap: capNumber || undefined },
      });
      setPlan({ plan: answer.body, of: asked });
    } catch (err) {
      setPlanError(asApiError(err));
    }
  };
  const planned = plan?.of === asked ? plan.plan : null;
  const blocked = !planned
    ? 'count first'
    : planned.wouldTouch === 0
      ? 'nothing to do'
      : !reason.trim()
        ? 'enter a reason'
        : !(capNumber >= 1 && capNumber <= 10000)
          ? 'cap must be 1..10000'
          : undefined;
  return (
    <section className="bulk" aria-label={props.title}>
      <h2>{props.title}</h2>
      <Form>
        {props.fields}
        <TextField
          label="Cap (rows at most)"
          hint="1..10000; default 1000"
          inputMode="numeric"
          value={cap}
          onChange={setCap}
        />
        <ScopedButton scope="operate" label="Count matching rows" onClick={() => void count()} />
        <ErrorNote error={planError} />
        {planned && (
          <p className="plan" role="status" aria-label="plan">
            <strong>{planned.matched}</strong> row(s) match now; a run with cap {planned.cap} would touch{' '}
            <strong>{planned.wouldTouch}</strong>
            {planned.sample.length > 0 && <> (first: {planned.sample.join(', ')})</>}.
          </p>
        )}
        <TextField
          label="Reason"
          hint="recorded with your key on the bulk action and every row"
          value={reason}
          onChange={setReason}
        />
        <Action
          label={`Run: ${KIND_TEXT[props.kind]}`}
          scope="operate"
          blocked={blocked}
          what={
            planned && (
              <>
                <p>
                  The receiver will {KIND_TEXT[props.kind]}: <strong>{planned.wouldTouch}</strong> row(s), one
                  by one in the order they arrived, in the background, each as its single action would (a
                  failed row holds back the later rows of the same{' '}
                  {props.kind === 'quarantine_replay' ? 'coupon' : 'account'}).
                </p>
                <p>
                  Filter: <code>{JSON.stringify(props.filter)}</code>; cap {capNumber}; reason:{' '}
                  <q>{reason}</q>.
                </p>
              </>
            )
          }
          send={() =>
            api<BulkAction>('/bulk-actions', {
              method: 'POST',
              body: { kind: props.kind, filter: props.filter, cap: capNumber, reason: reason.trim() },
            })
          }
          onDone={(answer) => navigate(`/bulk-actions/${(answer.body as BulkAction).id}`)}
        />
      </Form>
    </section>
  );
}

/** Progress of a bulk action as a bar and its counts. */
function Progress({ action }: { action: BulkAction }) {
  const finished = action.done + action.skipped + action.failed;
  return (
    <div className="progress-line">
      <progress max={action.total || 1} value={finished} aria-label="rows finished">
        {finished}/{action.total}
      </progress>
      <span>
        {finished} of {action.total} finished: {action.done} done, {action.skipped} skipped, {action.failed}{' '}
        failed, {action.pending} pending
      </span>
    </div>
  );
}

/** A bulk action: its progress (refreshed while it runs), every row's outcome, cancel. */
export function BulkActionScreen({ id }: { id: string }) {
  const [outcome, setOutcome] = useState('');
  const [running, setRunning] = useState(true);
  const action = usePagedGet<BulkDetail>(
    `/bulk-actions/${id}`,
    { outcome },
    { limit: 100, everyMs: running ? 1000 : undefined },
  );
  if (action.data && running && action.data.status !== 'running') setRunning(false);
  const kind = action.data?.kind;
  return (
    <Screen title={<>Bulk action {id}</>}>
      <PagedTable
        list={action}
        above={(data) => (
          <>
            <Facts
              rows={[
                ['what', KIND_TEXT[data.kind] ?? data.kind],
                ['status', <Badge text={data.status} tone={toneOf(data.status)} />],
                ['filter', <code>{JSON.stringify(data.filter)}</code>],
                ['reason', data.reason],
                ['started by', data.actor],
                ['cap', data.cap],
                ['started', <Time at={data.createdAt} />],
                ['finished', <Time at={data.finishedAt} />],
                ['cancelled by', data.cancelledBy ?? '—'],
              ]}
            />
            <Progress action={data} />
            {data.status === 'running' && (
              <Action
                label="Cancel bulk action"
                scope="operate"
                danger
                what={<p>Rows not run yet stay pending and are never run; a row in hand finishes first.</p>}
                send={() => api(`/bulk-actions/${id}/cancel`, { method: 'POST', body: {} })}
                onDone={action.reload}
              />
            )}
            <Tabs
              label="row outcome"
              value={outcome}
              onChange={setOutcome}
              options={[['', 'all rows'], 'done', 'skipped', 'failed', 'pending']}
            />
          </>
        )}
        label="rows"
        rowKey={(item) => item.seq}
        columns={[
          { header: '#', cell: (item) => item.seq },
          {
            header: 'row',
            cell: (item) => <Link href={targetHref(kind, item.targetId)}>{item.targetId}</Link>,
          },
          {
            header: 'outcome',
            cell: (item) => <Badge text={item.outcome} tone={toneOf(item.outcome)} />,
          },
          { header: 'code', cell: (item) => item.code ?? '' },
          { header: 'why', cell: (item) => item.message ?? '' },
          { header: 'order kept per', cell: (item) => item.groupKeys?.join(', ') ?? '' },
          { header: 'finished', cell: (item) => <Time at={item.finishedAt} /> },
        ]}
      />
    </Screen>
  );
}

/** Every bulk action, newest first, with its progress. */
export function BulkActionsScreen() {
  const actions = usePagedGet<BulkActionPage>('/bulk-actions', {}, { everyMs: 5000 });
  return (
    <Screen title="Bulk actions">
      <p className="muted">
        Start one from the <Link href="/quarantine">quarantine</Link> or the{' '}
        <Link href="/wallet">wallet outbox</Link>.
      </p>
      <PagedTable
        list={actions}
        rowKey={(a) => a.id}
        empty="No bulk action yet."
        columns={[
          {
            header: 'id',
            className: 'id',
            cell: (a) => <Link href={`/bulk-actions/${a.id}`}>{a.id}</Link>,
          },
          { header: 'what', cell: (a) => KIND_TEXT[a.kind] ?? a.kind },
          { header: 'status', cell: (a) => <Badge text={a.status} tone={toneOf(a.status)} /> },
          {
            header: 'progress',
            cell: (a) => (
              <>
                {a.done} done, {a.skipped} skipped, {a.failed} failed of {a.total}
              </>
            ),
          },
          { header: 'reason', cell: (a) => a.reason },
          { header: 'by', cell: (a) => a.actor },
          { header: 'started', cell: (a) => <Time at={a.createdAt} /> },
        ]}
      />
    </Screen>
  );
}
