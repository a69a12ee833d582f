import { CurrencyTable } from '../../platform/common/currency.js';
import { formatAmount } from '../../platform/common/money.js';
import type { SqlQueryable } from '../../platform/database/sql-queryable.js';
import { retentionHorizons } from '../../platform/retention-horizons/retention-horizons.js';
import { signedAmountSql } from './ledger.types.js';

/**
 * Placeholder of the time before which the retention policy may have removed `dataClass`'s data
 * (`retention_horizons`, docs/retention.md): {@link LedgerVerifier.verify} puts the time in, or
 * `-infinity` while it removed none (or on a schema before the table).
 */
const EXPIRED_BEFORE = (dataClass: string) => `:expired_before_${dataClass}:`;

/** Names of the checks {@link LedgerVerifier} runs (CONTRACT §7, §4, §8). */
export enum LedgerCheck {
  /** An operation's entries do not sum to zero, are not exactly one player and one house entry, or move another amount. */
  OPERATION_UNBALANCED = 'operation_unbalanced',
  /** The sum of all ledger entries is not zero. */
  LEDGER_UNBALANCED = 'ledger_unbalanced',
  /** An account's materialised balance differs from the sum of its entries. */
  BALANCE_MISMATCH = 'balance_mismatch',
  /** The balances of a currency's accounts (players and house sub-accounts) do not sum to zero. */
  CURRENCY_UNBALANCED = 'currency_unbalanced',
  /** A currency's house balance (the sum of its sub-accounts) differs from the sum of their entries. */
  HOUSE_BALANCE_MISMATCH = 'house_balance_mismatch',
  /** An operation key that is not `<coupon_code>:<generation>:<type>` or `adjustment:<key>` for its row. */
  OPERATION_KEY_MALFORMED = 'operation_key_malformed',
  /** The same operation key twice (the unique constraint forbids it; checked anyway). */
  OPERATION_KEY_DUPLICATE = 'operation_key_duplicate',
  /** A coupon operation on another account than the coupon's, or on an unregistered coupon. */
  OPERATION_ACCOUNT_MISMATCH = 'operation_account_mismatch',
  /** A registered coupon without exactly one `:0:stake_debit` of its stake. */
  STAKE_MISMATCH = 'stake_mismatch',
  /** Callback credits minus debits of a registered coupon differ from its latest settled generation's `realWin`. */
  COUPON_SETTLEMENT_MISMATCH = 'coupon_settlement_mismatch',
  /** A settlement operation decided by a stored snapshot is missing from the ledger, or differs. */
  DECIDED_OPERATION_MISSING = 'decided_operation_missing',
  /** A settlement operation in the ledger that no stored snapshot decided. */
  UNDECIDED_OPERATION = 'undecided_operation',
  /** An operation whose amount has more fraction digits than its currency's minor units (CONTRACT §3). */
  AMOUNT_PRECISION = 'amount_precision',
  /** A committed callback batch without its `processed` (inline) or `accepted` (inbox mode) delivery attempt (CONTRACT §8); synthetic §9 batches excepted. */
  BATCH_WITHOUT_DELIVERY = 'batch_without_delivery',
}

/** One broken invariant: which check, which row (operation key, account id, coupon code, batch id), what. */
export interface LedgerViolation {
  check: LedgerCheck;
  subject: string;
  detail: string;
}

/** Row counts and totals of the verified database; amounts are decimal strings. */
export interface LedgerSummary {
  accounts: number;
  operations: number;
  entries: number;
  coupons: number;
  registeredCoupons: number;
  needsReviewCoupons: number;
  batches: number;
  deliveryAttempts: number;
  /** Sum of every ledger entry (must be "0.00"), 2 fraction digits or as many as it needs. */
  entriesTotal: string;
  /** Sum of the player accounts' balances (all currencies), 2 fraction digits or as many as it needs. */
  playerBalances: string;
}

/** Outcome of {@link LedgerVerifier.verify}. */
export interface LedgerReport {
  ok: boolean;
  summary: LedgerSummary;
  violations: LedgerViolation[];
}

/**
 * Minor units of a currency in SQL, from the verifier's parameters: `$1` every known currency's
 * (jsonb), `$2` those of a currency neither ISO 4217 nor CURRENCY_MINOR_UNITS knows.
 */
const MINOR_UNITS = (currency: string) => `coalesce(($1::jsonb ->> ${currency})::int, $2::int)`;

/**
 * An amount as text in SQL with its currency's fraction digits (2 when `currency` is null), or
 * more when the value has more: exact, never rounded (`25.00`, `12.345`, `0.00012345`).
 */
const SHOWN = (amount: string, currency: string | null = null) =>
  `round(${amount}, greatest(${currency ? MINOR_UNITS(currency) : '2'}, min_scale(${amount})))::text`;

/** An entry `e` (its account `ea`) on a house sub-account of operation `o`'s currency, in SQL. */
const HOUSE_OF_OPERATION = `ea.kind = 'house' AND ea.currency = o.currency`;

/** Signed effect of an operation on the player's account, in SQL (CONTRACT §7). */
const PLAYER_SIGN = signedAmountSql('o.type', '1');

/**
 * Each check is one SQL statement returning `(subject, detail)` rows, one per violation; an
 * empty result means the invariant holds. They read committed data only and lock nothing.
 */
const CHECKS: { check: LedgerCheck; sql: string }[] = [
  {
    check: LedgerCheck.OPERATION_UNBALANCED,
    sql: `
      SELECT o.operation_key AS subject,
             format('%s entries summing to %s; player entries %s on %s (expected %s), house entries %s on %s house account(s) of %s (expected %s)',
                    count(e.id), ${SHOWN('coalesce(sum(e.amount), 0)', 'o.currency')},
                    ${SHOWN('coalesce(sum(e.amount) FILTER (WHERE e.account_id = o.account_id), 0)', 'o.currency')}, o.account_id,
                    ${SHOWN(`o.amount * ${PLAYER_SIGN}`, 'o.currency')},
                    ${SHOWN(`coalesce(sum(e.amount) FILTER (WHERE ${HOUSE_OF_OPERATION}), 0)`, 'o.currency')},
                    count(e.id) FILTER (WHERE ${HOUSE_OF_OPERATION}), o.currency,
                    ${SHOWN(`-o.amount * ${PLAYER_SIGN}`, 'o.currency')}) AS detail
      FROM financial_operations o
      LEFT JOIN ledger_entries e ON e.operation_id = o.id
      LEFT JOIN accounts ea ON ea.id = e.account_id
      GROUP BY o.id
      HAVING count(e.id) <> 2
          OR coalesce(sum(e.amount), 0) <> 0
          OR count(e.id) FILTER (WHERE e.account_id = o.account_id) <> 1
          OR coalesce(sum(e.amount) FILTER (WHERE e.account_id = o.account_id), 0) <> o.amount * ${PLAYER_SIGN}
          OR count(e.id) FILTER (WHERE ${HOUSE_OF_OPERATION}) <> 1
      ORDER BY o.id`,
  },
  {
    check: LedgerCheck.LEDGER_UNBALANCED,
    sql: `
      SELECT 'ledger_entries' AS subject, format('all entries sum to %s, not 0', ${SHOWN('sum(amount)')}) AS detail
      FROM ledger_entries HAVING coalesce(sum(amount), 0) <> 0`,
  },
  {
    check: LedgerCheck.BALANCE_MISMATCH,
    sql: `
      SELECT a.id AS subject, format('balance %s, entries sum to %s', ${SHOWN('a.balance', 'a.currency')},
                                     ${SHOWN('coalesce(e.total, 0)', 'a.currency')}) AS detail
      FROM accounts a
      LEFT JOIN (SELECT account_id, sum(amount) AS total FROM ledger_entries GROUP BY account_id) e ON e.account_id = a.id
      WHERE a.balance <> coalesce(e.total, 0)
      ORDER BY a.id`,
  },
  {
    check: LedgerCheck.CURRENCY_UNBALANCED,
    sql: `
      SELECT currency AS subject, format('the balances of its accounts sum to %s, not 0', ${SHOWN('sum(balance)', 'currency')}) AS detail
      FROM accounts GROUP BY currency HAVING sum(balance) <> 0
      ORDER BY currency`,
  },
  {
    check: LedgerCheck.HOUSE_BALANCE_MISMATCH,
    sql: `
      SELECT 'house:' || h.currency AS subject,
             format('house balance %s (%s sub-accounts), its entries sum to %s',
                    ${SHOWN('h.balance', 'h.currency')}, h.accounts, ${SHOWN('coalesce(e.total, 0)', 'h.currency')}) AS detail
      FROM (SELECT currency, sum(balance) AS balance, count(*) AS accounts FROM accounts WHERE kind = 'house' GROUP BY currency) h
      LEFT JOIN (SELECT a.currency, sum(le.amount) AS total FROM ledger_entries le JOIN accounts a ON a.id = le.account_id
                 WHERE a.kind = 'house' GROUP BY a.currency) e ON e.currency = h.currency
      WHERE h.balance <> coalesce(e.total, 0)
      ORDER BY h.currency`,
  },
  {
    check: LedgerCheck.OPERATION_KEY_MALFORMED,
    sql: `
      SELECT o.operation_key AS subject,
             format('type %s, coupon %s, generation %s', o.type, coalesce(o.coupon_code, '-'), coalesce(o.generation::text, '-')) AS detail
      FROM financial_operations o
      WHERE CASE
              WHEN o.type IN ('stake_debit', 'final_credit', 'recalculation_debit') THEN
                o.coupon_code IS NULL OR o.generation IS NULL
                OR o.operation_key <> o.coupon_code || ':' || o.generation || ':' || o.type
                OR (o.type = 'stake_debit' AND o.generation <> 0)
                OR (o.type = 'recalculation_debit' AND o.generation = 0)
              ELSE
                o.coupon_code IS NOT NULL OR o.operation_key NOT LIKE 'adjustment:_%'
                OR NOT EXISTS (SELECT 1 FROM account_adjustments j WHERE j.operation_id = o.id
                               AND 'adjustment:' || j.idempotency_key = o.operation_key)
            END
      ORDER BY o.id`,
  },
  {
    check: LedgerCheck.OPERATION_KEY_DUPLICATE,
    sql: `
      SELECT operation_key AS subject, format('%s operations with this key', count(*)) AS detail
      FROM financial_operations GROUP BY operation_key HAVING count(*) > 1 ORDER BY operation_key`,
  },
  {
    check: LedgerCheck.OPERATION_ACCOUNT_MISMATCH,
    sql: `
      SELECT o.operation_key AS subject,
             CASE WHEN c.coupon_code IS NULL THEN 'no such coupon'
                  WHEN c.account_id IS NULL THEN 'the coupon is not registered'
                  ELSE format('on %s %s, the coupon belongs to %s %s', o.account_id, o.currency, c.account_id, c.currency) END AS detail
      FROM financial_operations o
      LEFT JOIN coupons c ON c.coupon_code = o.coupon_code
      WHERE o.coupon_code IS NOT NULL
        AND (c.account_id IS NULL OR c.account_id <> o.account_id OR c.currency <> o.currency)
      ORDER BY o.id`,
  },
  {
    check: LedgerCheck.STAKE_MISMATCH,
    sql: `
      SELECT c.coupon_code AS subject,
             format('stake %s, %s stake debits summing to %s', ${SHOWN('c.stake', 'c.currency')}, count(o.id),
                    ${SHOWN('coalesce(sum(o.amount), 0)', 'c.currency')}) AS detail
      FROM coupons c
      LEFT JOIN financial_operations o ON o.coupon_code = c.coupon_code AND o.type = 'stake_debit'
      WHERE c.account_id IS NOT NULL
      GROUP BY c.coupon_code, c.stake, c.currency
      HAVING count(o.id) <> 1 OR sum(o.amount) <> c.stake
      ORDER BY c.coupon_code`,
  },
  {
    // CONTRACT §6/§7 as decide-settlement.ts implements them: a settled generation credited
    // exactly its settled amount (the debit of a recalculation cancels the previous generation's
    // credit); an open recalculation not yet settled nets to 0. History-only snapshots
    // (conflicting results, needs_review) move nothing, so the rule holds for flagged coupons too.
    check: LedgerCheck.COUPON_SETTLEMENT_MISMATCH,
    sql: `
      SELECT c.coupon_code AS subject,
             format('callback credits minus debits %s, expected %s (generation %s, %s%s)',
                    ${SHOWN('coalesce(n.net, 0)', 'c.currency')},
                    ${SHOWN('CASE WHEN c.generation_settled THEN c.settled_amount ELSE 0 END', 'c.currency')},
                    c.settlement_generation,
                    CASE WHEN c.generation_settled THEN 'settled for ' || ${SHOWN('c.settled_amount', 'c.currency')} ELSE 'not settled' END,
                    CASE WHEN c.needs_review THEN ', needs review' ELSE '' END) AS detail
      FROM coupons c
      LEFT JOIN (SELECT coupon_code,
                        sum(${signedAmountSql('type', 'amount')}) AS net,
                        max(generation) AS top
                 FROM financial_operations WHERE type IN ('final_credit', 'recalculation_debit')
                 GROUP BY coupon_code) n ON n.coupon_code = c.coupon_code
      WHERE c.account_id IS NOT NULL
        AND (coalesce(n.net, 0) <> CASE WHEN c.generation_settled THEN c.settled_amount ELSE 0 END
             OR coalesce(n.top, 0) > c.settlement_generation)
      ORDER BY c.coupon_code`,
  },
  {
    check: LedgerCheck.DECIDED_OPERATION_MISSING,
    sql: `
      SELECT d.key AS subject,
             CASE WHEN o.id IS NULL THEN format('decided by batch %s for %s, not in the ledger', d.batch_id, ${SHOWN('d.amount', 'd.currency')})
                  ELSE format('decided by batch %s for %s, the ledger has %s', d.batch_id, ${SHOWN('d.amount', 'd.currency')},
                              ${SHOWN('o.amount', 'd.currency')}) END AS detail
      FROM (SELECT DISTINCT ON (s.coupon_code || ':' || (op->>'generation') || ':' || (op->>'type'))
                   s.coupon_code || ':' || (op->>'generation') || ':' || (op->>'type') AS key,
                   (op->>'amount')::numeric AS amount, c.currency, s.batch_id, s.id
            FROM coupon_snapshots s
            JOIN coupons c ON c.coupon_code = s.coupon_code AND c.account_id IS NOT NULL
            CROSS JOIN LATERAL jsonb_array_elements(s.operations) op
            -- An amount finer than the coupon's currency, decided while it was unallocated, is
            -- never posted: its registration flags the coupon amount_precision instead.
            WHERE min_scale((op->>'amount')::numeric) <= ${MINOR_UNITS('c.currency')}
            ORDER BY 1, s.id) d
      LEFT JOIN financial_operations o ON o.operation_key = d.key
      WHERE o.id IS NULL OR o.amount <> d.amount
      ORDER BY d.id`,
  },
  {
    check: LedgerCheck.UNDECIDED_OPERATION,
    sql: `
      SELECT o.operation_key AS subject, format('%s of %s that no stored snapshot decided', o.type, ${SHOWN('o.amount', 'o.currency')}) AS detail
      FROM financial_operations o
      WHERE o.type IN ('final_credit', 'recalculation_debit')
        -- Posted before the snapshots' retention horizon: its snapshot may have expired (docs/retention.md).
        AND o.created_at >= ${EXPIRED_BEFORE('snapshots')}
        AND NOT EXISTS (SELECT 1 FROM coupon_snapshots s CROSS JOIN LATERAL jsonb_array_elements(s.operations) op
                        WHERE s.coupon_code = o.coupon_code
                          AND (op->>'generation')::int = o.generation AND op->>'type' = o.type)
      ORDER BY o.id`,
  },
  {
    check: LedgerCheck.AMOUNT_PRECISION,
    sql: `
      SELECT o.operation_key AS subject,
             format('%s %s has %s fraction digits, %s allows %s', ${SHOWN('o.amount', 'o.currency')}, o.currency,
                    min_scale(o.amount), o.currency, ${MINOR_UNITS('o.currency')}) AS detail
      FROM financial_operations o
      WHERE min_scale(o.amount) > ${MINOR_UNITS('o.currency')}
      ORDER BY o.id`,
  },
  {
    check: LedgerCheck.BATCH_WITHOUT_DELIVERY,
    sql: `
      SELECT b.batch_id AS subject, format('committed %s with payload %s, no processed or accepted delivery attempt', b.received_at, b.payload_hash) AS detail
      FROM callback_batches b
      WHERE b.received_at >= ${EXPIRED_BEFORE('delivery_attempts')} -- its attempts may have expired (docs/retention.md)
        AND NOT EXISTS (SELECT 1 FROM delivery_attempts d
                        WHERE d.batch_id = b.batch_id AND d.outcome IN ('processed', 'accepted')
                          AND d.payload_hash = b.payload_hash)
        -- 'accepted': the delivery committed to the inbox (CALLBACK_MODE=inbox), applied by a worker.
        -- Synthetic batches of CONTRACT §9 were not delivered: a coupon read from SportAPI
        -- (poll:<coupon_code>:<sha256>[:<16 hex>], longer than any callback batchId) and an
        -- operator's resolution (recorded in coupon_resolutions).
        AND NOT (b.batch_id ~ '^poll:.+:[0-9a-f]{64}(:[0-9a-f]{16})?$' AND length(b.batch_id) > 64)
        AND NOT EXISTS (SELECT 1 FROM coupon_resolutions r WHERE r.batch_id = b.batch_id)
      ORDER BY b.received_at, b.batch_id`,
  },
];

const SUMMARY_SQL = `
  SELECT (SELECT count(*) FROM accounts)::int AS accounts,
         (SELECT count(*) FROM financial_operations)::int AS operations,
         (SELECT count(*) FROM ledger_entries)::int AS entries,
         (SELECT count(*) FROM coupons)::int AS coupons,
         (SELECT count(*) FROM coupons WHERE account_id IS NOT NULL)::int AS "registeredCoupons",
         (SELECT count(*) FROM coupons WHERE needs_review)::int AS "needsReviewCoupons",
         (SELECT count(*) FROM callback_batches)::int AS batches,
         (SELECT count(*) FROM delivery_attempts)::int AS "deliveryAttempts",
         (SELECT coalesce(sum(amount), 0)::text FROM ledger_entries) AS "entriesTotal",
         (SELECT coalesce(sum(balance), 0)::text FROM accounts WHERE kind = 'player') AS "playerBalances"`;

/**
 * Checks a whole database against the ledger invariants of CONTRACT §7 and the delivery record of
 * §8 (the checks: docs/reliability.md); `npm run ledger:verify` and the reliability tests use it.
 * All statements run in one REPEATABLE READ READ ONLY transaction on `db`, one consistent snapshot
 * while the receiver writes, so `db` must be a single connection (`pg.Client` or a pool client).
 */
export class LedgerVerifier {
  /** `currencies`: the minor units the receiver runs with (CURRENCY_MINOR_UNITS; ISO 4217 by default). */
  constructor(
    private readonly db: SqlQueryable,
    private readonly currencies: CurrencyTable = CurrencyTable.of(),
  ) {}

  /** Runs every check. @throws the database error when a statement fails (e.g. tables missing). */
  async verify(): Promise<LedgerReport> {
    await this.db.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    try {
      const violations: LedgerViolation[] = [];
      const units = [this.currencies.toJson(), this.currencies.legacyMinorUnits];
      const horizons = await retentionHorizons(this.db, { ifPresent: true });
      for (const check_ of CHECKS) {
        const { check } = check_;
        const sql = check_.sql.replace(
          /:expired_before_([a-z_]+):/g,
          (_, c: string) => `'${horizons[c]?.toISOString() ?? '-infinity'}'::timestamptz`,
        );
        const { rows } = await this.db.query<{ subject: string; detail: string }>(
          sql,
          sql.includes('$1') ? units : undefined,
        );
        for (const r of rows) violations.push({ check, subject: r.subject, detail: r.detail });
      }
      const { rows } = await this.db.query<LedgerSummary & Record<string, unknown>>(SUMMARY_SQL);
      await this.db.query('COMMIT');
      const summary = {
        ...rows[0],
        entriesTotal: formatAmount(rows[0].entriesTotal),
        playerBalances: formatAmount(rows[0].playerBalances),
      };
      return { ok: violations.length === 0, summary, violations };
    } catch (err) {
      await this.db.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
}

/** A report as the CLI prints it: the summary, then one line per violation. */
export function formatLedgerReport(report: LedgerReport): string {
  const s = report.summary;
  const lines = [
    `accounts ${s.accounts}, financial operations ${s.operations}, ledger entries ${s.entries} (sum ${s.entriesTotal})`,
    `coupons ${s.coupons} (${s.registeredCoupons} registered, ${s.needsReviewCoupons} needs review), batches ${s.batches}, delivery attempts ${s.deliveryAttempts}`,
    `player balances total ${s.playerBalances}`,
  ];
  if (report.ok) {
    lines.push(`ledger OK: ${CHECKS.length} checks, no violation`);
  } else {
    lines.push(`ledger VIOLATIONS: ${report.violations.length}`);
    for (const v of report.violations) lines.push(`  ${v.check}  ${v.subject}: ${v.detail}`);
  }
  return lines.join('\n');
}
