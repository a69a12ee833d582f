import { useState } from 'react';
import { Link, useLocation, useSearch } from 'wouter';
import { query } from '../api';
import { Badge, Field, Json, Loading, Pager, Screen, Time, usePager, UtcField } from '../components';
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
          <table aria-label="operator actions">
            <thead>
              <tr>
                <th scope="col">time</th>
                <th scope="col">key</th>
                <th scope="col">action</th>
                <th scope="col">target</th>
                <th scope="col">reason</th>
                <th scope="col">outcome</th>
                <th scope="col">request id</th>
                <th scope="col">details</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Time at={a.at} />
                  </td>
                  <td>{a.actor}</td>
                  <td>{a.action}</td>
                  <td>
                    {a.targetKind ?? ''} {a.targetId ?? ''}
                  </td>
                  <td>{a.reason ?? ''}</td>
                  <td>
                    <Badge text={a.outcome} tone={a.outcome === 'ok' ? 'ok' : 'bad'} />
                  </td>
                  <td>
                    {a.requestId && (
                      // Its first 8 characters (the whole id on hover), linking to what else has it.
                      <Link href={`/search${query({ q: a.requestId })}`} title={a.requestId}>
                        <code>{a.requestId.slice(0, 8)}…</code>
                      </Link>
                    )}
                  </td>
                  <td className="details">
                    <Json value={a.details} label={`details of action ${a.id}`} oneLine />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {data.items.length === 0 && <p>No action matches.</p>}
          <Pager pager={pager} nextCursor={data.nextCursor} />
        </>
      )}
    </Screen>
  );
}
