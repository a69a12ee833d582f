import { useState } from 'react';
import { ApiError, asApiError, download, query, seg } from '../api';
import {
  Amount,
  ErrorNote,
  Facts,
  Form,
  PagedTable,
  RecordLink,
  Screen,
  TextField,
  Time,
  usePagedGet,
  UtcField,
} from '../components';
import { isoFromInput } from '../format';
import type { AccountPage, Statement } from '../types';

/** Player accounts by id, or those whose id starts with the typed prefix. */
export function AccountsScreen() {
  const [prefix, setPrefix] = useState('');
  const accounts = usePagedGet<AccountPage>('/accounts', { q: prefix.trim() });
  return (
    <Screen title="Accounts">
      <Form inline label="filter accounts">
        <TextField label="Account id starts with" value={prefix} onChange={setPrefix} />
      </Form>
      <PagedTable
        list={accounts}
        label="accounts"
        rowKey={(a) => a.id}
        empty="No account matches."
        columns={[
          { header: 'account', cell: (a) => <RecordLink to="accounts" id={a.id} /> },
          { header: 'balance', cell: (a) => <Amount value={a.balance} currency={a.currency} /> },
          { header: 'opened', cell: (a) => <Time at={a.createdAt} /> },
          { header: 'last change', cell: (a) => <Time at={a.updatedAt} /> },
        ]}
      />
    </Screen>
  );
}

/** An account: its balance and statement (ledger entries newest first, paged), and the CSV. */
export function AccountScreen({ id }: { id: string }) {
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const range = { from: isoFromInput(from), to: isoFromInput(to) };
  const statement = usePagedGet<Statement>(`/accounts/${seg(id)}/statement`, range);
  const [csvError, setCsvError] = useState<ApiError | undefined>();
  const [busy, setBusy] = useState(false);
  const csv = async () => {
    setBusy(true);
    setCsvError(undefined);
    try {
      await download(`/accounts/${seg(id)}/statement${query(range)}`, 'text/csv', `statement-${id}.csv`);
    } catch (err) {
      setCsvError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Screen
      title={<>Account {id}</>}
      actions={
        <button type="button" onClick={() => void csv()} disabled={busy}>
          {busy ? 'Downloading…' : 'Download CSV'}
        </button>
      }
    >
      <ErrorNote error={csvError} />
      <Form inline label="statement range">
        <UtcField label="From" value={from} onChange={setFrom} />
        <UtcField label="Before" value={to} onChange={setTo} />
      </Form>
      <PagedTable
        list={statement}
        above={(page) => (
          <>
            <Facts
              rows={[
                ['balance', <Amount value={page.balance} currency={page.currency} />],
                ['currency', page.currency],
              ]}
            />
            <h2>Statement</h2>
          </>
        )}
        label="statement"
        rowKey={(e) => e.entryId}
        empty="No entry in this range."
        columns={[
          { header: 'time', cell: (e) => <Time at={e.at} /> },
          { header: 'operation key', cell: (e) => <code>{e.operationKey}</code> },
          { header: 'type', cell: (e) => e.type },
          { header: 'coupon', cell: (e) => <RecordLink to="coupons" id={e.couponCode} /> },
          {
            header: 'amount',
            className: 'num',
            cell: (e) => <Amount value={e.amount} currency={e.currency} />,
          },
          {
            header: 'balance after',
            className: 'num',
            cell: (e) => <Amount value={e.balanceAfter} currency={e.currency} />,
          },
        ]}
      />
    </Screen>
  );
}
