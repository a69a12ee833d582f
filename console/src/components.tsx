import { useId, useRef, useState } from 'react';
import type { ReactNode } from 'react';
import { Link } from 'wouter';
import { ApiError, asApiError } from './api';
import type { Answer, Scope } from './api';
import { ISO_TIME, json, local, money, statusText, utc } from './format';
import { useSession } from './session';

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

/** A screen's title, and what loads under it: nothing while loading, the error, or `children`. */
export function Screen(props: { title: ReactNode; actions?: ReactNode; children: ReactNode }) {
  return (
    <section className="screen">
      <header className="screen-head">
        <h1>{props.title}</h1>
        {props.actions && <div className="screen-actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
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
 * Keyset pages: the cursors of the pages seen so far, for Newer/Older buttons. `cursor` is the
 * one of the page shown (undefined: the first).
 */
export function usePager() {
  const [cursors, setCursors] = useState<string[]>([]);
  return {
    cursor: cursors.at(-1),
    page: cursors.length + 1,
    older: (next: string) => setCursors((c) => [...c, next]),
    newer: () => setCursors((c) => c.slice(0, -1)),
    reset: () => setCursors([]),
  };
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

/**
 * A list as a table: a header row of `columns`, a row of each of `rows` (React key `rowKey`), and
 * `empty` under it when there is no row. `label` is its accessible name (the browser tests find
 * tables by it and read cells by column index).
 */
export function Table<T>(props: {
  label?: string;
  columns: Column<T>[];
  rows: readonly T[];
  rowKey: (row: T, index: number) => string | number;
  empty?: ReactNode;
}) {
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
