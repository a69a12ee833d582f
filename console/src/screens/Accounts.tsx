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
          <table aria-label="accounts">
            <thead>
              <tr>
                <th scope="col">account</th>
                <th scope="col">balance</th>
                <th scope="col">opened</th>
                <th scope="col">last change</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Link href={`/accounts/${seg(a.id)}`}>{a.id}</Link>
                  </td>
                  <td>
                    <Amount value={a.balance} currency={a.currency} />
                  </td>
                  <td>
                    <Time at={a.createdAt} />
                  </td>
                  <td>
                    <Time at={a.updatedAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {data.items.length === 0 && <p>No account matches.</p>}
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
          <table aria-label="statement">
            <thead>
              <tr>
                <th scope="col">time</th>
                <th scope="col">operation key</th>
                <th scope="col">type</th>
                <th scope="col">coupon</th>
                <th scope="col">amount</th>
                <th scope="col">balance after</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((e) => (
                <tr key={e.entryId}>
                  <td>
                    <Time at={e.at} />
                  </td>
                  <td>
                    <code>{e.operationKey}</code>
                  </td>
                  <td>{e.type}</td>
                  <td>
                    {e.couponCode ? <Link href={`/coupons/${seg(e.couponCode)}`}>{e.couponCode}</Link> : '—'}
                  </td>
                  <td className="num">
                    <Amount value={e.amount} currency={e.currency} />
                  </td>
                  <td className="num">
                    <Amount value={e.balanceAfter} currency={e.currency} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {data.items.length === 0 && <p>No entry in this range.</p>}
          <Pager pager={pager} nextCursor={data.nextCursor} />
        </>
      )}
    </Screen>
  );
}
