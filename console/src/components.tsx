import { useId, useRef, useState } from 'react';
import type { ReactNode } from 'react';
import { Link } from 'wouter';
import { ApiError, asApiError, query, seg } from './api';
import type { Answer, Scope } from './api';
import { ISO_TIME, json, local, money, statusText, utc } from './format';
import { useGet, useSession } from './session';
import type { Loaded } from './session';

/** A time in UTC, with the local time on hover. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span className="muted">—</span>;
  return (
    <time dateTime={at} title={local(at)}>
      {utc(at)}
    </time>
  );
}

/** Text with its ISO 8601 times shown as {@link Time} (UTC, local on hover): a search hit's label. */
export function WithTimes({ text }: { text: string }) {
  const parts: ReactNode[] = [];
  let last = 0;
  for (const m of text.matchAll(ISO_TIME)) {
    parts.push(text.slice(last, m.index), <Time key={m.index} at={m[0]} />);
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  return <>{parts}</>;
}

/**
 * A coupon status code with its kind (CONTRACT §6, the receiver's `STATUS_MAP`): `2 WIN`,
 * `99 UNKNOWN`; `none` when null.
 */
export function CouponStatus({ status, none = '—' }: { status: number | null | undefined; none?: string }) {
  const { who } = useSession();
  if (status === null || status === undefined) return <span className="muted">{none}</span>;
  const known = who.receiver.statusKinds[String(status)] !== undefined;
  return (
    <span
      className="status-code"
      title={known ? undefined : 'not in STATUS_MAP: stored, flagged for review, no money moves'}
    >
      {statusText(status, who.receiver.statusKinds)}
    </span>
  );
}

/**
 * A long id (request id, trace id, payload hash) as its first `length` characters and "…", the
 * whole id on hover; with `search`, a link to the search screen, which finds what else carries it.
 * `none` when there is none.
 */
export function ShortId(props: {
  value: string | null | undefined;
  length?: number;
  search?: boolean;
  none?: string;
}) {
  const { value, length = 8, none = '—' } = props;
  if (!value) return <span className="muted">{none}</span>;
  const text = (
    <code className="short-id">{value.length > length ? `${value.slice(0, length)}…` : value}</code>
  );
  return props.search ? (
    <Link href={`/search${query({ q: value })}`} title={value}>
      {text}
    </Link>
  ) : (
    <span title={value}>{text}</span>
  );
}

/** An amount exactly as the API gave it, with its currency. */
export function Amount({ value, currency }: { value: string | null | undefined; currency?: string | null }) {
  return <span className="amount">{money(value, currency)}</span>;
}

/** What went wrong, explained (401/403 included), with the field errors of a 400. */
export function ErrorNote({ error }: { error: ApiError | undefined }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      <p>{error.explanation}</p>
      {error.fields.length > 0 && (
        <ul>
          {error.fields.map((f) => (
            <li key={f.path}>
              <code>{f.path}</code>: {f.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/**
 * A screen: its title, its `actions` beside it (or, with `refresh`, a Refresh button calling it),
 * and `children` under them.
 */
export function Screen(props: {
  title: ReactNode;
  actions?: ReactNode;
  refresh?: () => void;
  children: ReactNode;
}) {
  const actions =
    props.actions ??
    (props.refresh && (
      <button type="button" onClick={props.refresh}>
        Refresh
      </button>
    ));
  return (
    <section className="screen">
      <header className="screen-head">
        <h1>{props.title}</h1>
        {actions && <div className="screen-actions">{actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

/** What a GET of {@link useGet} has so far (its `reload` aside). */
type Got<T> = Pick<Loaded<T>, 'data' | 'error' | 'loading'>;

/**
 * What `got` loaded, given to `children`; until then "Loading…" or the error. A reload keeps the
 * data shown (no "Loading…"); its error shows above the data.
 */
export function WhenLoaded<T>(props: { got: Got<T>; children: (data: T) => ReactNode }) {
  const { data, error, loading } = props.got;
  return (
    <>
      <Loading loading={loading && !data} error={error} />
      {data ? props.children(data) : null}
    </>
  );
}

/** The screen of one record ({@link Screen}): its title, then what `got` loaded ({@link WhenLoaded}). */
export function RecordScreen<T>(props: {
  title: ReactNode;
  refresh?: () => void;
  got: Got<T>;
  children: (data: T) => ReactNode;
}) {
  return (
    <Screen title={props.title} refresh={props.refresh}>
      <WhenLoaded got={props.got}>{props.children}</WhenLoaded>
    </Screen>
  );
}

/** Label/value rows. */
export function Facts({ rows }: { rows: [string, ReactNode][] }) {
  return (
    <dl className="facts">
      {rows.map(([label, value]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A value as JSON text: indented, or (`oneLine`) on one line that wraps, for a table cell. */
export function Json({ value, label, oneLine }: { value: unknown; label?: string; oneLine?: boolean }) {
  return (
    <pre className={oneLine ? 'json one-line' : 'json'} aria-label={label} tabIndex={0}>
      {json(value, oneLine)}
    </pre>
  );
}

/** A labelled form field around one input. */
export function Field(props: { label: string; hint?: string; children: (id: string) => ReactNode }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.children(id)}
      {props.hint && <small>{props.hint}</small>}
    </div>
  );
}

/**
 * A time field read as UTC, as the console shows times (seconds allowed); `onChange` gets the
 * field's text, {@link isoFromInput} turns it into ISO 8601.
 */
export function UtcField(props: { label: string; value: string; onChange: (value: string) => void }) {
  return (
    <Field label={`${props.label} (UTC)`}>
      {(id) => (
        <input
          id={id}
          type="datetime-local"
          step="1"
          value={props.value}
          onChange={(e) => props.onChange(e.target.value)}
        />
      )}
    </Field>
  );
}

/** A text field; `onChange` gets its text as typed. */
export function TextField(props: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  hint?: string;
  inputMode?: 'decimal' | 'numeric';
}) {
  return (
    <Field label={props.label} hint={props.hint}>
      {(id) => (
        <input
          id={id}
          inputMode={props.inputMode}
          value={props.value}
          onChange={(e) => props.onChange(e.target.value)}
        />
      )}
    </Field>
  );
}

/** A choice of {@link SelectField} or {@link Tabs}: a value shown as itself, or `[value, text]`. */
export type Choice<V extends string> = V | readonly [V, string];

const valueAndText = <V extends string>(choice: Choice<V>): readonly [V, string] =>
  typeof choice === 'string' ? [choice, choice] : choice;

/** A control that chooses one of `options`: its label, the value chosen, and a change of it. */
interface ChoiceProps<V extends string> {
  label: string;
  value: V;
  onChange: (value: V) => void;
  options: readonly Choice<V>[];
}

/** A drop-down of `options`; with `any`, first the empty value, shown as "any". */
export function SelectField<V extends string>(props: ChoiceProps<V> & { any?: boolean }) {
  return (
    <Field label={props.label}>
      {(id) => (
        <select id={id} value={props.value} onChange={(e) => props.onChange(e.target.value as V)}>
          {props.any && <option value="">any</option>}
          {props.options.map(valueAndText).map(([value, text]) => (
            <option key={value} value={value}>
              {text}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/**
 * A group of buttons of which the one of `value` is pressed (a list's filter, a view), named
 * `label`; `children` follow the buttons.
 */
export function Tabs<V extends string>(props: ChoiceProps<V> & { children?: ReactNode }) {
  return (
    <div className="filters" role="group" aria-label={props.label}>
      {props.options.map(valueAndText).map(([value, text]) => (
        <button
          key={value}
          type="button"
          aria-pressed={props.value === value}
          onClick={() => props.onChange(value)}
        >
          {text}
        </button>
      ))}
      {props.children}
    </div>
  );
}

/** A form of fields that act as they change: never submitted; `label` is its accessible name. */
export function Form(props: { label?: string; inline?: boolean; children: ReactNode }) {
  return (
    <form
      className={props.inline ? 'form inline' : 'form'}
      aria-label={props.label}
      onSubmit={(e) => e.preventDefault()}
    >
      {props.children}
    </form>
  );
}

/** Loading, error, or the loaded content. */
export function Loading({ loading, error }: { loading: boolean; error?: ApiError }) {
  if (error) return <ErrorNote error={error} />;
  return loading ? <p className="muted">Loading…</p> : null;
}

/** What the server answered to an action: its status and body, as text. */
function AnswerNote({ answer }: { answer: { ok: boolean; status: number; body: unknown; text?: string } }) {
  return (
    <div className={answer.ok ? 'answer ok' : 'answer failed'} role="status" aria-label="server answer">
      <p>
        <strong>Server answered {answer.status}</strong>
        {answer.text ? `: ${answer.text}` : ''}
      </p>
      <Json value={answer.body} label="answer body" />
    </div>
  );
}

/**
 * An action on the receiver: a button (disabled, naming the scope, when the key lacks it), a
 * dialog saying what will happen before anything is sent, then the server's answer under it.
 * `blocked` names why it cannot be sent yet (a form not filled in).
 */
export function Action(props: {
  label: string;
  scope: Scope;
  what: ReactNode;
  send: () => Promise<Answer<unknown>>;
  onDone?: (answer: Answer<unknown>) => void;
  blocked?: string;
  danger?: boolean;
}) {
  const { can } = useSession();
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [answer, setAnswer] = useState<{ ok: boolean; status: number; body: unknown; text?: string } | null>(
    null,
  );
  const allowed = can(props.scope);

  async function confirm() {
    setBusy(true);
    try {
      const result = await props.send();
      setAnswer({ ok: true, status: result.status, body: result.body });
      props.onDone?.(result);
    } catch (err) {
      const error = asApiError(err);
      setAnswer({ ok: false, status: error.status, body: error.body ?? null, text: error.explanation });
    } finally {
      setBusy(false);
      dialog.current?.close();
    }
  }

  return (
    <div className="action">
      <button
        type="button"
        className={props.danger ? 'danger' : undefined}
        disabled={!allowed || busy || Boolean(props.blocked)}
        title={!allowed ? `needs scope ${props.scope}` : props.blocked}
        onClick={() => {
          setAnswer(null);
          dialog.current?.showModal();
        }}
      >
        {props.label}
      </button>
      {!allowed && <span className="needs-scope">needs scope {props.scope}</span>}
      {allowed && props.blocked && <span className="muted">{props.blocked}</span>}
      <dialog ref={dialog} aria-label={`Confirm: ${props.label}`}>
        <h2>{props.label}?</h2>
        <div className="what">{props.what}</div>
        <div className="buttons">
          <button type="button" onClick={() => dialog.current?.close()} disabled={busy}>
            Cancel
          </button>
          <button type="button" className="primary" onClick={() => void confirm()} disabled={busy}>
            {busy ? 'Sending…' : `Confirm: ${props.label}`}
          </button>
        </div>
      </dialog>
      {answer && <AnswerNote answer={answer} />}
    </div>
  );
}

/**
 * An {@link Action} with the reason for it typed in a field (`reasonLabel`) before it, in a form
 * named `form`: `what` and `send` get the reason trimmed; `required`: blocked until there is one.
 */
export function ReasonAction(props: {
  form: string;
  reasonLabel: string;
  required?: boolean;
  label: string;
  scope: Scope;
  danger?: boolean;
  what: (reason: string) => ReactNode;
  send: (reason: string) => Promise<Answer<unknown>>;
  onDone?: (answer: Answer<unknown>) => void;
}) {
  const [typed, setTyped] = useState('');
  const reason = typed.trim();
  return (
    <Form inline label={props.form}>
      <TextField label={props.reasonLabel} value={typed} onChange={setTyped} />
      <Action
        label={props.label}
        scope={props.scope}
        danger={props.danger}
        blocked={props.required && !reason ? 'enter a reason' : undefined}
        what={props.what(reason)}
        send={() => props.send(reason)}
        onDone={props.onDone}
      />
    </Form>
  );
}

/**
 * Keyset pages: the cursors of the pages seen so far, for Newer/Older buttons. `cursor` is the
 * one of the page shown (undefined: the first). A new `list` (its path and filter) starts again
 * at the first page.
 */
export function usePager(list = '') {
  const [seen, setSeen] = useState<{ list: string; cursors: string[] }>({ list, cursors: [] });
  const cursors = seen.list === list ? seen.cursors : [];
  return {
    cursor: cursors.at(-1),
    page: cursors.length + 1,
    older: (next: string) => setSeen({ list, cursors: [...cursors, next] }),
    newer: () => setSeen({ list, cursors: cursors.slice(0, -1) }),
  };
}

/** A page of a list endpoint: its rows, and the cursor of the next (older) page, null on the last. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** A keyset-paged list: the page shown ({@link useGet}) and its pages ({@link usePager}). */
export type Paged<P> = Loaded<P> & { pager: ReturnType<typeof usePager> };

/**
 * GETs the page of `path` with `filter` (its empty values left out) that the pager is on,
 * `limit` rows (default 50); a change of the filter goes back to the first page. `everyMs`: as
 * {@link useGet}.
 */
export function usePagedGet<P extends Page<unknown>>(
  path: string,
  filter: Record<string, string | number | boolean | null | undefined> = {},
  options: { limit?: number; everyMs?: number } = {},
): Paged<P> {
  const pager = usePager(`${path}${query(filter)}`);
  const got = useGet<P>(
    `${path}${query({ ...filter, cursor: pager.cursor, limit: options.limit ?? 50 })}`,
    options.everyMs,
  );
  return { ...got, pager };
}

/** Newer/Older buttons of a {@link usePager} list. */
export function Pager(props: { pager: ReturnType<typeof usePager>; nextCursor: string | null | undefined }) {
  const { pager, nextCursor } = props;
  return (
    <nav className="pager" aria-label="pages">
      <button type="button" disabled={pager.page === 1} onClick={pager.newer}>
        ← Newer
      </button>
      <span>page {pager.page}</span>
      <button type="button" disabled={!nextCursor} onClick={() => nextCursor && pager.older(nextCursor)}>
        Older →
      </button>
    </nav>
  );
}

/** A column of a {@link Table}: its header, and what a row shows in its cell. */
export interface Column<T> {
  header: ReactNode;
  cell: (row: T) => ReactNode;
  /** The cells' class (`num`, `id`, `details`, `preview`). */
  className?: string;
}

/** What {@link Table} shows: `rows` under a header row of `columns`. */
export interface TableProps<T> {
  /** Its accessible name (the browser tests find tables by it and read cells by column index). */
  label?: string;
  columns: Column<T>[];
  rows: readonly T[];
  /** A row's React key. */
  rowKey: (row: T, index: number) => string | number;
  /** Shown under the table when there is no row. */
  empty?: ReactNode;
}

/** A list as a table: a header row of `columns`, a row of each of `rows`, and `empty` when none. */
export function Table<T>(props: TableProps<T>) {
  const { columns, rows } = props;
  return (
    <>
      <table aria-label={props.label}>
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th key={i} scope="col">
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, r) => (
            <tr key={props.rowKey(row, r)}>
              {columns.map((c, i) => (
                <td key={i} className={c.className}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && props.empty !== undefined && <p>{props.empty}</p>}
    </>
  );
}

/**
 * A keyset-paged list ({@link usePagedGet}) as a {@link Table} of its page with Newer/Older under
 * it; "Loading…" or the error until the page is there, and what `above` makes of it first.
 */
export function PagedTable<P extends Page<unknown>>(
  props: Omit<TableProps<P['items'][number]>, 'rows'> & {
    list: Paged<P>;
    above?: (page: P) => ReactNode;
  },
) {
  const { list, above, ...table } = props;
  return (
    <WhenLoaded got={list}>
      {(page) => (
        <>
          {above?.(page)}
          <Table {...table} rows={page.items} />
          <Pager pager={list.pager} nextCursor={page.nextCursor} />
        </>
      )}
    </WhenLoaded>
  );
}

/**
 * A link to the screen of a coupon, an account or a batch `id` (the path segment encoded);
 * `none` when there is no id.
 */
export function RecordLink(props: {
  to: 'coupons' | 'accounts' | 'batches';
  id: string | null | undefined;
  none?: ReactNode;
}) {
  if (!props.id) return <>{props.none ?? '—'}</>;
  return <Link href={`/${props.to}/${seg(props.id)}`}>{props.id}</Link>;
}

/** A status word with its colour class (`ok`, `warn`, `bad`). */
export function Badge({ text, tone }: { text: string; tone?: 'ok' | 'warn' | 'bad' }) {
  return <span className={`badge ${tone ?? ''}`}>{text}</span>;
}

/** Tone of an outcome or state word. */
export function toneOf(word: string | null | undefined): 'ok' | 'warn' | 'bad' | undefined {
  if (!word) return undefined;
  if (['processed', 'delivered', 'done', 'ok', 'settled', 'accepted', 'applied'].includes(word)) return 'ok';
  if (['duplicate', 'pending', 'running', 'skipped', 'retry', 'cancelled', 'unchanged'].includes(word))
    return 'warn';
  return 'bad';
}

/** A link to a console screen. */
export function To({ href, children }: { href: string; children: ReactNode }) {
  return <Link href={href}>{children}</Link>;
}

/** A fresh Idempotency-Key (`console-` and 32 hex digits; works outside secure contexts too). */
export function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** A button that needs a scope but changes nothing (a bulk plan): disabled, naming the scope, without it. */
export function ScopedButton(props: {
  scope: Scope;
  label: string;
  onClick: () => void;
  disabled?: boolean;
}) {
  const { can } = useSession();
  const allowed = can(props.scope);
  return (
    <span className="action">
      <button
        type="button"
        disabled={!allowed || props.disabled}
        title={allowed ? undefined : `needs scope ${props.scope}`}
        onClick={props.onClick}
      >
        {props.label}
      </button>
      {!allowed && <span className="needs-scope">needs scope {props.scope}</span>}
    </span>
  );
}
