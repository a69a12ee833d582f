import { Fragment, StrictMode, useState } from 'react';
import type { FormEvent, ReactElement } from 'react';
import { createRoot } from 'react-dom/client';
import { Link, Route, Router, Switch, useLocation } from 'wouter';
import type { ApiError } from './api';
import { ErrorNote } from './components';
import { SessionGate, useSession } from './session';
import { BatchScreen, DeliveriesScreen } from './screens/Deliveries';
import { AccountScreen, AccountsScreen } from './screens/Accounts';
import { BulkActionScreen, BulkActionsScreen } from './screens/BulkActions';
import { CouponScreen, CouponsScreen } from './screens/Coupons';
import { OperatorActionsScreen } from './screens/OperatorActions';
import { OverviewScreen } from './screens/Overview';
import { QuarantineEntryScreen, QuarantineScreen } from './screens/Quarantine';
import { SearchScreen } from './screens/Search';
import {
  EventsScreen,
  OutboxRowScreen,
  OutboxScreen,
  publisherDestination,
  WALLET,
  WalletScreen,
} from './screens/Outbox';
import './styles.css';

/** The sign-in form: the operator pastes a key; it goes out only as `Authorization: Bearer`. */
function SignIn(props: { submit: (key: string) => Promise<void>; problem: ApiError | null; busy: boolean }) {
  const [key, setKey] = useState('');
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    if (key.trim()) void props.submit(key.trim());
  };
  return (
    <main className="sign-in">
      <form onSubmit={onSubmit} aria-label="sign in">
        <h1>Settlement receiver · operator console</h1>
        <p>
          Paste a partner API key (one of the receiver's <code>OPS_API_KEYS</code>). It stays in this tab only
          and is sent as <code>Authorization: Bearer</code>; closing the tab forgets it.
        </p>
        <label htmlFor="ops-key">API key</label>
        <input
          id="ops-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={key}
          onChange={(e) => setKey(e.target.value)}
          autoFocus
        />
        <button type="submit" className="primary" disabled={props.busy || !key.trim()}>
          {props.busy ? 'Signing in…' : 'Sign in'}
        </button>
        <ErrorNote error={props.problem ?? undefined} />
      </form>
    </main>
  );
}

const NAV: [string, string][] = [
  ['/', 'Overview'],
  ['/coupons', 'Coupons'],
  ['/quarantine', 'Quarantine'],
  ['/deliveries', 'Deliveries'],
  ['/wallet', 'Wallet outbox'],
  ['/events', 'Settlement events'],
  ['/accounts', 'Accounts'],
  ['/bulk-actions', 'Bulk actions'],
  ['/operator-actions', 'Operator actions'],
];

/**
 * The record id of the screen's address after `prefix` (`/coupons/` …), decoded once: ids such as
 * coupon codes and batch ids may hold `/`, `%` or `?`, which the router's own decoding would mix up.
 */
function idAfter(prefix: string): string {
  const path = window.location.pathname.slice('/ops'.length + prefix.length);
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** A record's screen, started afresh (forms, pages) when the record changes. */
const keyed = (id: string, render: (id: string) => ReactElement) => (
  <Fragment key={id}>{render(id)}</Fragment>
);

/** The frame of every screen: navigation, the search box, the key signed in. */
function Shell() {
  const { who, signOut } = useSession();
  const [location, navigate] = useLocation();
  const [q, setQ] = useState('');
  const search = (e: FormEvent) => {
    e.preventDefault();
    if (q.trim()) navigate(`/search?q=${encodeURIComponent(q.trim())}`);
  };
  const current = (href: string) => (href === '/' ? location === '/' : location.startsWith(href));
  return (
    <div className="app">
      <header className="top">
        <Link href="/" className="brand">
          Settlement receiver
        </Link>
        <form role="search" onSubmit={search} className="search-box">
          <label htmlFor="search-q" className="visually-hidden">
            Search any id
          </label>
          <input
            id="search-q"
            type="search"
            placeholder="batch id, coupon code, bet uuid, account, operation key, outbox id, request id"
            value={q}
            onChange={(e) => setQ(e.target.value)}
          />
          <button type="submit">Search</button>
        </form>
        <div className="who">
          <span title="the key's name and scopes">
            {who.name} · {who.scopes.join(', ')}
          </span>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <nav className="side" aria-label="screens">
        <ul>
          {NAV.map(([href, label]) => (
            <li key={href}>
              <Link href={href} aria-current={current(href) ? 'page' : undefined}>
                {label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main className="content">
        <Switch>
          <Route path="/" component={OverviewScreen} />
          <Route path="/search" component={SearchScreen} />
          <Route path="/coupons" component={CouponsScreen} />
          <Route path="/coupons/*">
            {() => keyed(idAfter('/coupons/'), (id) => <CouponScreen code={id} />)}
          </Route>
          <Route path="/quarantine" component={QuarantineScreen} />
          <Route path="/quarantine/:id">
            {(p) => keyed(p.id, (id) => <QuarantineEntryScreen id={id} />)}
          </Route>
          <Route path="/deliveries" component={DeliveriesScreen} />
          <Route path="/batches/*">
            {() => keyed(idAfter('/batches/'), (id) => <BatchScreen batchId={id} />)}
          </Route>
          <Route path="/wallet" component={WalletScreen} />
          <Route path="/wallet/outbox/:id">
            {(p) => keyed(p.id, (id) => <OutboxRowScreen dest={WALLET} id={id} />)}
          </Route>
          <Route path="/events" component={EventsScreen} />
          <Route path="/events/:publisher">
            {(p) => keyed(p.publisher, (name) => <OutboxScreen dest={publisherDestination(name)} />)}
          </Route>
          <Route path="/events/:publisher/outbox/:id">
            {(p) =>
              keyed(`${p.publisher}/${p.id}`, () => (
                <OutboxRowScreen dest={publisherDestination(p.publisher)} id={p.id} />
              ))
            }
          </Route>
          <Route path="/accounts" component={AccountsScreen} />
          <Route path="/accounts/*">
            {() => keyed(idAfter('/accounts/'), (id) => <AccountScreen id={id} />)}
          </Route>
          <Route path="/bulk-actions" component={BulkActionsScreen} />
          <Route path="/bulk-actions/:id">{(p) => keyed(p.id, (id) => <BulkActionScreen id={id} />)}</Route>
          <Route path="/operator-actions" component={OperatorActionsScreen} />
          <Route>
            <p>No such screen. Start from the overview.</p>
          </Route>
        </Switch>
      </main>
    </div>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Router base="/ops">
      <SessionGate
        signInForm={(submit, problem, busy) => <SignIn submit={submit} problem={problem} busy={busy} />}
      >
        <Shell />
      </SessionGate>
    </Router>
  </StrictMode>,
);
