import { useState } from 'react';
import { Link } from 'wouter';
import { ApiError, asApiError, download, query, seg } from '../api';
import {
  Amount,
  ErrorNote,
  Facts,
  Field,
  Loading,
  Pager,
  Screen,
  Table,
  Time,
  usePager,
  UtcField,
} from '../components';
import { isoFromInput } from '../format';
import { useGet } from '../session';
import type { AccountPage, Statement } from '../types';

/** Player accounts by id, or those whose id starts with the typed prefix. */
export function AccountsScreen() {
  const pager = usePager();
  const [prefix, setPrefix] = useState('');
  const { data, error, loading } = useGet<AccountPage>(
    `/accounts${query({ q: prefix.trim(), cursor: pager.cursor, limit: 50 })}`,
  );
  return (
    <Screen title="Accounts">
      <form className="form inline" onSubmit={(e) => e.preventDefault()} aria-label="filter accounts">
        <Field label="Account id starts with">
          {(id) => (
            <input
              id={id}
              value={prefix}
              onChange={(e) => {
                pager.reset();
                setPrefix(e.target.value);
              }}
            />
          )}
        </Field>
      </form>
      <Loading loading={loading && !data} error={error} />
      {data && (
        <>
          <Table
            label="accounts"
            rows={data.items}
            rowKey={(a) => a.id}
            empty="No account matches."
            columns={[
              { header: 'account', cell: (a) => <Link href={`/accounts/${seg(a.id)}`}>{a.id}</Link> },
              { header: 'balance', cell: (a) => <Amount value={a.balance} currency={a.currency} /> },
              { header: 'opened', cell: (a) => <Time at={a.createdAt} /> },
              { header: 'last change', cell: (a) => <Time at={a.updatedAt} /> },
            ]}
          />
          <Pager pager={pager} nextCursor={data.nextCursor} />
        </>
      )}
    </Screen>
  );
}

/** An account: its balance and statement (ledger entries newest first, paged), and the CSV. */
export function AccountScreen({ id }: { id: string }) {
  const pager = usePager();
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const range = { from: isoFromInput(from), to: isoFromInput(to) };
  const { data, error, loading } = useGet<Statement>(
    `/accounts/${seg(id)}/statement${query({ ...range, cursor: pager.cursor, limit: 50 })}`,
  );
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
      <form className="form inline" onSubmit={(e) => e.preventDefault()} aria-label="statement range">
        <UtcField
          label="From"
          value={from}
          onChange={(v) => {
            pager.reset();
            setFrom(v);
          }}
        />
        <UtcField
          label="Before"
          value={to}
          onChange={(v) => {
            pager.reset();
            setTo(v);
          }}
        />
      </form>
      <Loading loading={loading && !data} error={error} />
      {data && (
        <>
          <Facts
            rows={[
              ['balance', <Amount value={data.balance} currency={data.currency} />],
              ['currency', data.currency],
            ]}
          />
          <h2>Statement</h2>
          <Table
            label="statement"
            rows={data.items}
            rowKey={(e) => e.entryId}
            empty="No entry in this range."
            columns={[
              { header: 'time', cell: (e) => <Time at={e.at} /> },
              { header: 'operation key', cell: (e) => <code>{e.operationKey}</code> },
              { header: 'type', cell: (e) => e.type },
              {
                header: 'coupon',
                cell: (e) =>
                  e.couponCode ? <Link href={`/coupons/${seg(e.couponCode)}`}>{e.couponCode}</Link> : '—',
              },
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
          <Pager pager={pager} nextCursor={data.nextCursor} />
        </>
      )}
    </Screen>
  );
}
