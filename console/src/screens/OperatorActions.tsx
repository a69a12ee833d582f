import { useState } from 'react';
import { useLocation, useSearch } from 'wouter';
import { query } from '../api';
import {
  Badge,
  Form,
  Json,
  PagedTable,
  Screen,
  SelectField,
  ShortId,
  TextField,
  Time,
  usePagedGet,
  UtcField,
} from '../components';
import { isoFromInput } from '../format';
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
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const filter = {
    actor: params.get('actor') ?? '',
    action: params.get('action') ?? '',
    targetKind: params.get('targetKind') ?? '',
    targetId: params.get('targetId') ?? '',
  };
  // The filter is the screen's address (a link to a key's or a target's actions).
  const set = (name: keyof typeof filter) => (value: string) =>
    navigate(`/operator-actions${query({ ...filter, [name]: value })}`, { replace: true });
  const actions = usePagedGet<OperatorActionPage>('/operator-actions', {
    ...filter,
    from: isoFromInput(from),
    to: isoFromInput(to),
  });
  return (
    <Screen title="Operator actions">
      <Form inline label="filter operator actions">
        <TextField label="Key" value={filter.actor} onChange={set('actor')} />
        <SelectField
          label="Action"
          value={filter.action}
          onChange={set('action')}
          options={OPERATOR_ACTIONS}
          any
        />
        <SelectField
          label="Target kind"
          value={filter.targetKind}
          onChange={set('targetKind')}
          options={TARGET_KINDS}
          any
        />
        <TextField label="Target id" value={filter.targetId} onChange={set('targetId')} />
        <UtcField label="From" value={from} onChange={setFrom} />
        <UtcField label="Before" value={to} onChange={setTo} />
      </Form>
      <PagedTable
        list={actions}
        label="operator actions"
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
            cell: (a) => <ShortId value={a.requestId} search none="" />,
          },
          {
            header: 'details',
            className: 'details',
            cell: (a) => <Json value={a.details} label={`details of action ${a.id}`} oneLine />,
          },
        ]}
      />
    </Screen>
  );
}
