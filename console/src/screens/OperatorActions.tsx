import { useState } from 'react';
import { Link, useLocation, useSearch } from 'wouter';
import { query } from '../api';
import { Badge, Field, Json, Loading, Pager, Screen, Table, Time, usePager, UtcField } from '../components';
import { isoFromInput } from '../format';
import { useGet } from '../session';
import type { OperatorActionPage } from '../types';
// The filter's choices: the enums of `GET /operator-actions` in openapi.json (`npm run openapi`).
import {
  pathsOperatorActionsGetParametersQueryActionValues as OPERATOR_ACTIONS,
  pathsOperatorActionsGetParametersQueryTargetKindValues as TARGET_KINDS,
} from '../api.gen';

/** The append-only log of what keys of scope money or operate did, filterable. */
export function OperatorActionsScreen() {
  const params = new URLSearchParams(useSearch());
  const [, navigate] = useLocation();
  const pager = usePager();
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const filter = {
    actor: params.get('actor') ?? '',
    action: params.get('action') ?? '',
    targetKind: params.get('targetKind') ?? '',
    targetId: params.get('targetId') ?? '',
  };
  const set = (name: keyof typeof filter, value: string) => {
    pager.reset();
    navigate(`/operator-actions${query({ ...filter, [name]: value })}`, { replace: true });
  };
  const { data, error, loading } = useGet<OperatorActionPage>(
    `/operator-actions${query({ ...filter, from: isoFromInput(from), to: isoFromInput(to), cursor: pager.cursor, limit: 50 })}`,
  );
  return (
    <Screen title="Operator actions">
      <form className="form inline" onSubmit={(e) => e.preventDefault()} aria-label="filter operator actions">
        <Field label="Key">
          {(id) => <input id={id} value={filter.actor} onChange={(e) => set('actor', e.target.value)} />}
        </Field>
        <Field label="Action">
          {(id) => (
            <select id={id} value={filter.action} onChange={(e) => set('action', e.target.value)}>
              <option value="">any</option>
              {OPERATOR_ACTIONS.map((a) => (
                <option key={a}>{a}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Target kind">
          {(id) => (
            <select id={id} value={filter.targetKind} onChange={(e) => set('targetKind', e.target.value)}>
              <option value="">any</option>
              {TARGET_KINDS.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Target id">
          {(id) => (
            <input id={id} value={filter.targetId} onChange={(e) => set('targetId', e.target.value)} />
          )}
        </Field>
        <UtcField label="From" value={from} onChange={setFrom} />
        <UtcField label="Before" value={to} onChange={setTo} />
      </form>
      <Loading loading={loading && !data} error={error} />
      {data && (
        <>
          <Table
            label="operator actions"
            rows={data.items}
            rowKey={(a) => a.id}
            empty="No action matches."
            columns={[
              { header: 'time', cell: (a) => <Time at={a.at} /> },
              { header: 'key', cell: (a) => a.actor },
              { header: 'action', cell: (a) => a.action },
              {
                header: 'target',
                cell: (a) => (
                  <>
                    {a.targetKind ?? ''} {a.targetId ?? ''}
                  </>
                ),
              },
              { header: 'reason', cell: (a) => a.reason ?? '' },
              {
                header: 'outcome',
                cell: (a) => <Badge text={a.outcome} tone={a.outcome === 'ok' ? 'ok' : 'bad'} />,
              },
              {
                header: 'request id',
                cell: (a) =>
                  a.requestId && (
                    // Its first 8 characters (the whole id on hover), linking to what else has it.
                    <Link href={`/search${query({ q: a.requestId })}`} title={a.requestId}>
                      <code>{a.requestId.slice(0, 8)}…</code>
                    </Link>
                  ),
              },
              {
                header: 'details',
                className: 'details',
                cell: (a) => <Json value={a.details} label={`details of action ${a.id}`} oneLine />,
              },
            ]}
          />
          <Pager pager={pager} nextCursor={data.nextCursor} />
        </>
      )}
    </Screen>
  );
}
