import { OperationType } from '../../src/core/ledger/ledger.types.js';
import {
  admitDeferredOperations,
  decideSettlement,
  INITIAL_SETTLEMENT_STATE,
  sameSettlementState,
} from '../../src/core/settlement-rules/decide-settlement.js';
import {
  CouponSettlementState,
  SettlementDecision,
  SnapshotSource,
  StatusKind,
  TransitionName as T,
} from '../../src/core/settlement-rules/settlement.types.js';
import { StatusMap } from '../../src/core/settlement-rules/status-map.js';
import { DEFAULT_STATUS_MAP } from '../../src/core/settlement/settlement.config.js';

const S = (over: Partial<CouponSettlementState> = {}): CouponSettlementState => ({
  ...INITIAL_SETTLEMENT_STATE,
  ...over,
});
const settled = (generation: number, amount: string, over: Partial<CouponSettlementState> = {}) =>
  S({ generation, generationSettled: true, settledAmount: amount, status: 2, realWin: amount, ...over });
const K = StatusKind;

interface Row {
  rule: string;
  state: CouponSettlementState;
  status: number;
  kind: StatusKind;
  realWin: string | null;
  transition: T;
  applied: boolean;
  ops: string[];
  next: Partial<CouponSettlementState>;
  /** Default: a callback snapshot. */
  source?: SnapshotSource;
}

// One row per rule of CONTRACT §6. `ops` are `type:generation:amount`.
const table: Row[] = [
  {
    rule: 'PENDING on an unsettled coupon without open recalculation: applied, no money',
    state: S(),
    status: 1,
    kind: K.PENDING,
    realWin: null,
    transition: T.PENDING_APPLIED,
    applied: true,
    ops: [],
    next: { status: 1, realWin: null, generation: 0, generationSettled: false },
  },
  {
    rule: 'PENDING after settlement: history only (stale)',
    state: settled(0, '50.00'),
    status: 1,
    kind: K.PENDING,
    realWin: null,
    transition: T.PENDING_STALE,
    applied: false,
    ops: [],
    next: { status: 2, realWin: '50.00', generationSettled: true },
  },
  {
    rule: 'PENDING while a recalculation is open: history only',
    state: S({ generation: 1, recalculationOpen: true, status: 15 }),
    status: 1,
    kind: K.PENDING,
    realWin: null,
    transition: T.PENDING_STALE,
    applied: false,
    ops: [],
    next: { status: 15, generation: 1, recalculationOpen: true },
  },
  {
    rule: 'WIN on an unsettled generation: settled, final_credit',
    state: S(),
    status: 2,
    kind: K.WIN,
    realWin: '185.50',
    transition: T.SETTLED,
    applied: true,
    ops: ['final_credit:0:185.50'],
    next: { status: 2, realWin: '185.50', generationSettled: true, settledAmount: '185.50' },
  },
  {
    rule: 'REFUND on an unsettled generation: settled, final_credit of the returned amount',
    state: S(),
    status: 3,
    kind: K.REFUND,
    realWin: '10.00',
    transition: T.SETTLED,
    applied: true,
    ops: ['final_credit:0:10.00'],
    next: { status: 3, generationSettled: true, settledAmount: '10.00' },
  },
  {
    rule: 'LOSS with realWin 0: settled, no ledger row',
    state: S(),
    status: 4,
    kind: K.LOSS,
    realWin: '0.00',
    transition: T.SETTLED,
    applied: true,
    ops: [],
    next: { status: 4, generationSettled: true, settledAmount: '0.00' },
  },
  {
    rule: 'LOSS with realWin null: settled for 0',
    state: S(),
    status: 4,
    kind: K.LOSS,
    realWin: null,
    transition: T.SETTLED,
    applied: true,
    ops: [],
    next: { status: 4, realWin: '0.00', generationSettled: true, settledAmount: '0.00' },
  },
  {
    rule: 'WIN without realWin: history only, needs_review',
    state: S(),
    status: 2,
    kind: K.WIN,
    realWin: null,
    transition: T.FINAL_WITHOUT_AMOUNT,
    applied: false,
    ops: [],
    next: { status: null, generationSettled: false, needsReview: true, reviewReason: 'final_without_amount' },
  },
  {
    rule: 'WIN of 0 contradicts its status: history only, needs_review',
    state: S(),
    status: 2,
    kind: K.WIN,
    realWin: '0.00',
    transition: T.INCONSISTENT_RESULT,
    applied: false,
    ops: [],
    next: { status: null, generationSettled: false, needsReview: true, reviewReason: 'inconsistent_result' },
  },
  {
    rule: 'LOSS above 0 contradicts its status: history only, needs_review, not paid',
    state: S(),
    status: 4,
    kind: K.LOSS,
    realWin: '50.00',
    transition: T.INCONSISTENT_RESULT,
    applied: false,
    ops: [],
    next: { status: null, generationSettled: false, needsReview: true, reviewReason: 'inconsistent_result' },
  },
  {
    rule: 'REFUND of 0 settles for 0 (a void leg can return nothing)',
    state: S(),
    status: 3,
    kind: K.REFUND,
    realWin: '0.00',
    transition: T.SETTLED,
    applied: true,
    ops: [],
    next: { status: 3, generationSettled: true, settledAmount: '0.00' },
  },
  {
    rule: 'final with the amount the generation was settled for: applied, no money',
    state: settled(0, '50.00'),
    status: 2,
    kind: K.WIN,
    realWin: '50.00',
    transition: T.SAME_RESULT,
    applied: true,
    ops: [],
    next: { status: 2, generationSettled: true, needsReview: false },
  },
  {
    rule: 'same amount closes an open recalculation',
    state: settled(1, '20.00', { status: 15, recalculationOpen: true }),
    status: 2,
    kind: K.WIN,
    realWin: '20.00',
    transition: T.SAME_RESULT,
    applied: true,
    ops: [],
    next: { status: 2, recalculationOpen: false, generation: 1 },
  },
  {
    rule: 'final with a different amount in a settled generation: history only, needs_review',
    state: settled(0, '50.00'),
    status: 2,
    kind: K.WIN,
    realWin: '60.00',
    transition: T.CONFLICTING_RESULT,
    applied: false,
    ops: [],
    next: { realWin: '50.00', settledAmount: '50.00', needsReview: true, reviewReason: 'conflicting_result' },
  },
  {
    rule: 'final on an unsettled generation closes the open recalculation',
    state: S({ generation: 1, recalculationOpen: true, status: 15 }),
    status: 4,
    kind: K.LOSS,
    realWin: '0',
    transition: T.SETTLED,
    applied: true,
    ops: [],
    next: { status: 4, generation: 1, generationSettled: true, settledAmount: '0', recalculationOpen: false },
  },
  {
    rule: 'final paying generation 1 after a recalculation',
    state: S({ generation: 1, recalculationOpen: true, status: 15 }),
    status: 2,
    kind: K.WIN,
    realWin: '30.00',
    transition: T.SETTLED,
    applied: true,
    ops: ['final_credit:1:30.00'],
    next: { generation: 1, settledAmount: '30.00', recalculationOpen: false },
  },
  {
    rule: 'RECALCULATION without realWin: generation+1, debit what g credited',
    state: settled(0, '50.00'),
    status: 15,
    kind: K.RECALCULATION,
    realWin: null,
    transition: T.RECALCULATION_OPENED,
    applied: true,
    ops: ['recalculation_debit:1:50.00'],
    next: {
      status: 15,
      realWin: null,
      generation: 1,
      generationSettled: false,
      settledAmount: null,
      recalculationOpen: true,
    },
  },
  {
    rule: 'RECALCULATION with realWin: debit and credit generation+1 at once',
    state: settled(0, '50.00'),
    status: 15,
    kind: K.RECALCULATION,
    realWin: '20.00',
    transition: T.RECALCULATION_SETTLED,
    applied: true,
    ops: ['recalculation_debit:1:50.00', 'final_credit:1:20.00'],
    next: { generation: 1, generationSettled: true, settledAmount: '20.00', recalculationOpen: true },
  },
  {
    rule: 'RECALCULATION of a LOSS (credited 0): no debit row',
    state: settled(0, '0.00', { status: 4 }),
    status: 15,
    kind: K.RECALCULATION,
    realWin: null,
    transition: T.RECALCULATION_OPENED,
    applied: true,
    ops: [],
    next: { generation: 1, recalculationOpen: true },
  },
  {
    rule: 'RECALCULATION of a never-settled coupon: no debit, generation+1',
    state: S({ status: 1 }),
    status: 15,
    kind: K.RECALCULATION,
    realWin: null,
    transition: T.RECALCULATION_OPENED,
    applied: true,
    ops: [],
    next: { generation: 1, recalculationOpen: true, generationSettled: false },
  },
  {
    rule: 'RECALCULATION repeated while open, no realWin: history only',
    state: S({ generation: 1, recalculationOpen: true, status: 15 }),
    status: 15,
    kind: K.RECALCULATION,
    realWin: null,
    transition: T.RECALCULATION_REPEATED,
    applied: false,
    ops: [],
    next: { generation: 1, recalculationOpen: true },
  },
  {
    rule: 'RECALCULATION while open on an unsettled generation with realWin: settles g',
    state: S({ generation: 1, recalculationOpen: true, status: 15 }),
    status: 15,
    kind: K.RECALCULATION,
    realWin: '25.00',
    transition: T.RECALCULATION_SETTLED,
    applied: true,
    ops: ['final_credit:1:25.00'],
    next: { generation: 1, generationSettled: true, settledAmount: '25.00', recalculationOpen: true },
  },
  {
    rule: 'RECALCULATION while open with the same amount: history only',
    state: settled(1, '20.00', { status: 15, recalculationOpen: true }),
    status: 15,
    kind: K.RECALCULATION,
    realWin: '20.00',
    transition: T.RECALCULATION_REPEATED,
    applied: false,
    ops: [],
    next: { generation: 1, settledAmount: '20.00', needsReview: false },
  },
  {
    rule: 'RECALCULATION while open with a different amount: history only, needs_review',
    state: settled(1, '20.00', { status: 15, recalculationOpen: true }),
    status: 15,
    kind: K.RECALCULATION,
    realWin: '21.00',
    transition: T.RECALCULATION_CONFLICT,
    applied: false,
    ops: [],
    next: {
      generation: 1,
      settledAmount: '20.00',
      needsReview: true,
      reviewReason: 'recalculation_conflict',
    },
  },
  {
    rule: 'UNKNOWN status: applied (status), needs_review, no money, realWin kept',
    state: settled(0, '5.00'),
    status: 99,
    kind: K.UNKNOWN,
    realWin: '500.00',
    transition: T.UNKNOWN_STATUS,
    applied: true,
    ops: [],
    next: {
      status: 99,
      realWin: '5.00',
      settledAmount: '5.00',
      needsReview: true,
      reviewReason: 'unknown_status',
    },
  },
];

const P = SnapshotSource.POLL;
const flaggedSettled = (generation: number, amount: string, reason = T.CONFLICTING_RESULT) =>
  settled(generation, amount, { needsReview: true, reviewReason: reason });

// Authoritative sources (CONTRACT §9): a coupon read from SportAPI, an operator's resolution.
const authoritativeTable: Row[] = [
  {
    rule: 'poll: PENDING on an unsettled coupon flagged by an unknown status: applied, the flag cleared',
    source: P,
    state: S({ status: 77, needsReview: true, reviewReason: T.UNKNOWN_STATUS }),
    status: 1,
    kind: K.PENDING,
    realWin: null,
    transition: T.PENDING_APPLIED,
    applied: true,
    ops: [],
    next: { status: 1, generationSettled: false, needsReview: false, reviewReason: null },
  },
  {
    rule: 'the same PENDING from a callback: applied, the flag stays',
    state: S({ status: 77, needsReview: true, reviewReason: T.UNKNOWN_STATUS }),
    status: 1,
    kind: K.PENDING,
    realWin: null,
    transition: T.PENDING_APPLIED,
    applied: true,
    ops: [],
    next: { status: 1, needsReview: true, reviewReason: T.UNKNOWN_STATUS },
  },
  {
    rule: 'poll: PENDING after settlement: history only, a flag stays (the paid result is not confirmed)',
    source: P,
    state: flaggedSettled(0, '50.00'),
    status: 1,
    kind: K.PENDING,
    realWin: null,
    transition: T.PENDING_STALE,
    applied: false,
    ops: [],
    next: { status: 2, generationSettled: true, needsReview: true, reviewReason: T.CONFLICTING_RESULT },
  },
  {
    rule: 'poll: WIN with another amount than the settled one: re-settled as generation g+1',
    source: P,
    state: flaggedSettled(0, '50.00'),
    status: 2,
    kind: K.WIN,
    realWin: '80.00',
    transition: T.RESETTLED,
    applied: true,
    ops: ['recalculation_debit:1:50.00', 'final_credit:1:80.00'],
    next: {
      status: 2,
      realWin: '80.00',
      generation: 1,
      generationSettled: true,
      settledAmount: '80.00',
      recalculationOpen: false,
      needsReview: false,
      reviewReason: null,
    },
  },
  {
    rule: 'the same conflicting WIN from a callback: still history only and needs_review',
    state: flaggedSettled(0, '50.00'),
    status: 2,
    kind: K.WIN,
    realWin: '80.00',
    transition: T.CONFLICTING_RESULT,
    applied: false,
    ops: [],
    next: { generation: 0, settledAmount: '50.00', needsReview: true },
  },
  {
    rule: 'poll: LOSS on a generation settled as a win: g+1 debits the win, credits nothing',
    source: P,
    state: flaggedSettled(0, '50.00'),
    status: 4,
    kind: K.LOSS,
    realWin: null,
    transition: T.RESETTLED,
    applied: true,
    ops: ['recalculation_debit:1:50.00'],
    next: { status: 4, realWin: '0.00', generation: 1, settledAmount: '0.00', needsReview: false },
  },
  {
    rule: 'poll: WIN after a settled LOSS: g+1 has no debit (nothing was credited), credits the win',
    source: P,
    state: flaggedSettled(2, '0.00'),
    status: 2,
    kind: K.WIN,
    realWin: '12.50',
    transition: T.RESETTLED,
    applied: true,
    ops: ['final_credit:3:12.50'],
    next: { generation: 3, settledAmount: '12.50', needsReview: false },
  },
  {
    rule: 'poll: the amount already paid: no money, the review is cleared',
    source: P,
    state: flaggedSettled(0, '50.00'),
    status: 2,
    kind: K.WIN,
    realWin: '50.0',
    transition: T.SAME_RESULT,
    applied: true,
    ops: [],
    next: { generation: 0, settledAmount: '50.00', needsReview: false, reviewReason: null },
  },
  {
    rule: 'poll: a final result on an unsettled flagged generation settles it and clears the review',
    source: P,
    state: S({ status: 2, needsReview: true, reviewReason: T.FINAL_WITHOUT_AMOUNT }),
    status: 2,
    kind: K.WIN,
    realWin: '20.00',
    transition: T.SETTLED,
    applied: true,
    ops: ['final_credit:0:20.00'],
    next: { generationSettled: true, settledAmount: '20.00', needsReview: false, reviewReason: null },
  },
  {
    rule: 'poll: PENDING on a settled flagged coupon: history only, still flagged',
    source: P,
    state: flaggedSettled(0, '50.00'),
    status: 1,
    kind: K.PENDING,
    realWin: null,
    transition: T.PENDING_STALE,
    applied: false,
    ops: [],
    next: { status: 2, needsReview: true },
  },
  {
    rule: 'poll: a WIN without realWin is not paid, even from SportAPI',
    source: P,
    state: S(),
    status: 2,
    kind: K.WIN,
    realWin: null,
    transition: T.FINAL_WITHOUT_AMOUNT,
    applied: false,
    ops: [],
    next: { needsReview: true, reviewReason: T.FINAL_WITHOUT_AMOUNT },
  },
  {
    rule: 'poll: RECALCULATION with another amount while open and settled: g+1, the recalculation stays open',
    source: P,
    state: settled(1, '30.00', {
      status: 15,
      recalculationOpen: true,
      needsReview: true,
      reviewReason: T.RECALCULATION_CONFLICT,
    }),
    status: 15,
    kind: K.RECALCULATION,
    realWin: '40.00',
    transition: T.RESETTLED,
    applied: true,
    ops: ['recalculation_debit:2:30.00', 'final_credit:2:40.00'],
    next: { generation: 2, settledAmount: '40.00', recalculationOpen: true, needsReview: false },
  },
  {
    rule: 'poll: RECALCULATION confirming the open recalculation on a flagged coupon: no money, review cleared',
    source: P,
    state: settled(1, '30.00', {
      status: 15,
      recalculationOpen: true,
      needsReview: true,
      reviewReason: T.RECALCULATION_CONFLICT,
    }),
    status: 15,
    kind: K.RECALCULATION,
    realWin: '30.00',
    transition: T.RECALCULATION_REPEATED,
    applied: true,
    ops: [],
    next: { generation: 1, recalculationOpen: true, needsReview: false, reviewReason: null },
  },
  {
    rule: 'poll: RECALCULATION the receiver missed: a new generation as from a callback',
    source: P,
    state: settled(0, '50.00'),
    status: 15,
    kind: K.RECALCULATION,
    realWin: '10.00',
    transition: T.RECALCULATION_SETTLED,
    applied: true,
    ops: ['recalculation_debit:1:50.00', 'final_credit:1:10.00'],
    next: { generation: 1, settledAmount: '10.00', recalculationOpen: true },
  },
  {
    rule: 'poll: UNKNOWN status: applied and flagged, no money',
    source: P,
    state: settled(0, '50.00'),
    status: 9,
    kind: K.UNKNOWN,
    realWin: null,
    transition: T.UNKNOWN_STATUS,
    applied: true,
    ops: [],
    next: { status: 9, needsReview: true },
  },
  {
    rule: 'resolution: an operator amount different from the settled one: generation g+1',
    source: SnapshotSource.RESOLUTION,
    state: flaggedSettled(1, '25.00'),
    status: 2,
    kind: K.WIN,
    realWin: '12.50',
    transition: T.RESETTLED,
    applied: true,
    ops: ['recalculation_debit:2:25.00', 'final_credit:2:12.50'],
    next: { generation: 2, settledAmount: '12.50', needsReview: false },
  },
];
table.push(...authoritativeTable);

describe('decideSettlement: CONTRACT §6 as a table', () => {
  it.each(table)('$rule', (row) => {
    const d: SettlementDecision = decideSettlement(
      row.state,
      { status: row.status, realWin: row.realWin },
      row.kind,
      row.source,
    );
    expect(d.transition).toBe(row.transition);
    expect(d.applied).toBe(row.applied);
    expect(d.operations.map((o) => `${o.type}:${o.generation}:${o.amount}`)).toEqual(row.ops);
    expect(d.state).toMatchObject(row.next);
  });

  it('never creates two operations of one type in one transition', () => {
    for (const row of table) {
      const d = decideSettlement(
        row.state,
        { status: row.status, realWin: row.realWin },
        row.kind,
        row.source,
      );
      const types = d.operations.map((o) => o.type);
      expect(new Set(types).size).toBe(types.length);
    }
  });

  it('does not mutate the state it is given', () => {
    const state = Object.freeze(settled(0, '50.00'));
    expect(() => decideSettlement(state, { status: 15, realWin: '1.00' }, K.RECALCULATION)).not.toThrow();
    expect(state.generation).toBe(0);
  });

  it('a replayed sequence moves money once: win, same win, recalc, recalc, loss', () => {
    const sequence: [number, StatusKind, string | null][] = [
      [2, K.WIN, '50.00'],
      [2, K.WIN, '50.00'],
      [15, K.RECALCULATION, null],
      [15, K.RECALCULATION, null],
      [4, K.LOSS, '0'],
      [4, K.LOSS, '0'],
    ];
    let state = S();
    const ops: string[] = [];
    for (const [status, kind, realWin] of sequence) {
      const d = decideSettlement(state, { status, realWin }, kind);
      state = d.state;
      ops.push(...d.operations.map((o) => `${o.type}:${o.generation}:${o.amount}`));
    }
    expect(ops).toEqual(['final_credit:0:50.00', 'recalculation_debit:1:50.00']);
    expect(state).toMatchObject({
      generation: 1,
      generationSettled: true,
      recalculationOpen: false,
      needsReview: false,
    });
  });
});

describe('decideSettlement: authoritative reads are idempotent (CONTRACT §9)', () => {
  it('conflicting callback, then the read result twice: one new generation, money moved once', () => {
    const steps: [SnapshotSource, number, StatusKind, string | null][] = [
      [SnapshotSource.CALLBACK, 2, K.WIN, '50.00'],
      [SnapshotSource.CALLBACK, 2, K.WIN, '70.00'],
      [P, 2, K.WIN, '70.00'],
      [P, 2, K.WIN, '70.00'],
      [SnapshotSource.CALLBACK, 2, K.WIN, '70.00'],
    ];
    let state = S();
    const ops: string[] = [];
    const transitions: string[] = [];
    for (const [source, status, kind, realWin] of steps) {
      const d = decideSettlement(state, { status, realWin }, kind, source);
      state = d.state;
      transitions.push(d.transition);
      ops.push(...d.operations.map((o) => `${o.type}:${o.generation}:${o.amount}`));
    }
    expect(transitions).toEqual([T.SETTLED, T.CONFLICTING_RESULT, T.RESETTLED, T.SAME_RESULT, T.SAME_RESULT]);
    expect(ops).toEqual(['final_credit:0:50.00', 'recalculation_debit:1:50.00', 'final_credit:1:70.00']);
    expect(state).toMatchObject({ generation: 1, settledAmount: '70.00', needsReview: false });
  });
});

describe('StatusMap', () => {
  it('maps the defaults of CONTRACT §6 and everything else to UNKNOWN', () => {
    const map = new StatusMap(DEFAULT_STATUS_MAP);
    expect([1, 2, 3, 4, 15, 0, 5, 99, -1].map((c) => map.kindOf(c))).toEqual([
      'PENDING',
      'WIN',
      'REFUND',
      'LOSS',
      'RECALCULATION',
      'UNKNOWN',
      'UNKNOWN',
      'UNKNOWN',
      'UNKNOWN',
    ]);
  });

  it('takes a configured map', () => {
    const map = new StatusMap({ 10: 'WIN', 11: 'LOSS' });
    expect([10, 11, 2].map((c) => map.kindOf(c))).toEqual(['WIN', 'LOSS', 'UNKNOWN']);
  });
});

describe('sameSettlementState', () => {
  it('compares every field, amounts as decimals', () => {
    expect(sameSettlementState(settled(0, '50.00'), settled(0, '50'))).toBe(true);
    expect(sameSettlementState(settled(0, '50.00'), settled(0, '50.01'))).toBe(false);
    expect(sameSettlementState(S(), S({ needsReview: true }))).toBe(false);
    expect(sameSettlementState(S(), S({ status: 1 }))).toBe(false);
    expect(sameSettlementState(S({ realWin: null }), S({ realWin: '0.00' }))).toBe(false);
    expect(sameSettlementState(settled(1, '5.00'), settled(1, '5.00', { recalculationOpen: true }))).toBe(
      false,
    );
  });
});

// Issue 17, CONTRACT §3: a registered coupon's realWin at most its currency's minor units. One
// table per currency class (0, 2, 3, 6, 8 digits): exact credits, refusals (history only,
// needs_review amount_precision, never rounded, never paid).
describe('decideSettlement: amounts at the precision of the coupon currency (issue 17)', () => {
  const classes: { currency: string; digits: number; fits: string[]; finer: string[] }[] = [
    { currency: 'JPY', digits: 0, fits: ['1500', '1500.00', '0'], finer: ['1500.50', '0.1'] },
    { currency: 'EUR', digits: 2, fits: ['185.50', '0.01', '7'], finer: ['185.505', '0.001'] },
    { currency: 'KWD', digits: 3, fits: ['12.345', '0.001', '12.3450'], finer: ['12.3456', '0.0001'] },
    { currency: 'USDT', digits: 6, fits: ['0.000001', '25.123456'], finer: ['0.0000001', '25.1234567'] },
    { currency: 'BTC', digits: 8, fits: ['0.00012345', '0.00000001', '21000000'], finer: ['0.000000001'] },
  ];
  for (const c of classes) {
    describe(`${c.currency} (${c.digits} digits)`, () => {
      it.each(c.fits)('WIN %s: settled and credited exactly that amount', (amount) => {
        const d = decideSettlement(
          S(),
          { status: 2, realWin: amount },
          K.WIN,
          SnapshotSource.CALLBACK,
          c.digits,
        );
        if (/[1-9]/.test(amount)) {
          expect([d.transition, d.applied, d.operations]).toEqual([
            T.SETTLED,
            true,
            [{ type: 'final_credit', generation: 0, amount }],
          ]);
        } else expect([d.transition, d.operations]).toEqual([T.INCONSISTENT_RESULT, []]);
      });

      it.each(
        c.finer.flatMap((amount) => [K.WIN, K.REFUND, K.RECALCULATION, K.PENDING].map((k) => [amount, k])),
      )('realWin %s with kind %s: history only, needs_review amount_precision, no money', (amount, kind) => {
        for (const state of [S(), settled(0, '1'), S({ recalculationOpen: true, generation: 1 })]) {
          const d = decideSettlement(
            state,
            { status: 2, realWin: amount as string },
            kind as StatusKind,
            SnapshotSource.CALLBACK,
            c.digits,
          );
          expect([d.transition, d.applied, d.operations]).toEqual([T.AMOUNT_PRECISION, false, []]);
          expect(d.state).toEqual({ ...state, needsReview: true, reviewReason: 'amount_precision' });
        }
      });
    });
  }

  it('authoritative sources are refused a finer amount too; an unallocated coupon (null) is not checked', () => {
    for (const source of [SnapshotSource.POLL, SnapshotSource.RESOLUTION]) {
      const d = decideSettlement(settled(0, '1500'), { status: 2, realWin: '1499.5' }, K.WIN, source, 0);
      expect([d.transition, d.operations, d.state.settledAmount]).toEqual([T.AMOUNT_PRECISION, [], '1500']);
    }
    const unallocated = decideSettlement(
      S(),
      { status: 2, realWin: '1500.50' },
      K.WIN,
      SnapshotSource.CALLBACK,
      null,
    );
    expect(unallocated.operations).toEqual([{ type: 'final_credit', generation: 0, amount: '1500.50' }]);
  });

  it('a recalculation in KWD and in BTC moves money to the last digit', () => {
    for (const [digits, win, recalculated, loss] of [
      [3, '12.345', '7.005', '0'],
      [8, '0.00012345', '0.00000001', '0'],
    ] as const) {
      let state = S();
      const ops: string[] = [];
      for (const [status, kind, realWin] of [
        [2, K.WIN, win],
        [15, K.RECALCULATION, recalculated],
        [2, K.WIN, recalculated],
        [15, K.RECALCULATION, null],
        [4, K.LOSS, loss],
      ] as [number, StatusKind, string | null][]) {
        const d = decideSettlement(state, { status, realWin }, kind, SnapshotSource.CALLBACK, digits);
        state = d.state;
        ops.push(...d.operations.map((o) => `${o.type}:${o.generation}:${o.amount}`));
      }
      expect(ops).toEqual([
        `final_credit:0:${win}`,
        `recalculation_debit:1:${win}`,
        `final_credit:1:${recalculated}`,
        `recalculation_debit:2:${recalculated}`,
      ]);
      expect(state).toMatchObject({
        generation: 2,
        generationSettled: true,
        settledAmount: '0',
        needsReview: false,
      });
    }
  });
});

describe('admitDeferredOperations: registering a coupon settled while unallocated (issue 17)', () => {
  const op = (type: 'final_credit' | 'recalculation_debit', generation: number, amount: string) => ({
    type: type as OperationType.FINAL_CREDIT,
    generation,
    amount,
  });
  const rows = (...ops: ReturnType<typeof op>[][]) =>
    ops.map((o, i) => ({ batchId: `b${i}`, operations: o }));

  it('everything fits: posted as decided, the state unchanged', () => {
    const decided = rows([op('final_credit', 0, '1500')]);
    expect(admitDeferredOperations(settled(0, '1500'), decided, 0)).toEqual({
      admitted: decided,
      state: null,
    });
  });

  it('a finer final credit: not posted, the generation unsettled, flagged amount_precision', () => {
    const r = admitDeferredOperations(settled(0, '1500.50'), rows([op('final_credit', 0, '1500.50')]), 0);
    expect(r.admitted).toEqual(rows([]));
    expect(r.state).toEqual(
      settled(0, '1500.50', {
        generationSettled: false,
        settledAmount: null,
        needsReview: true,
        reviewReason: 'amount_precision',
      }),
    );
  });

  it('a finer credit cancelled by a recalculation: both left out, the later fitting result posted', () => {
    const state = settled(1, '12.34', { recalculationOpen: true });
    const r = admitDeferredOperations(
      state,
      rows(
        [op('final_credit', 0, '10.005')],
        [op('recalculation_debit', 1, '10.005'), op('final_credit', 1, '12.34')],
      ),
      2,
    );
    expect(r.admitted).toEqual(rows([], [op('final_credit', 1, '12.34')]));
    expect(r.state).toEqual({ ...state, needsReview: true, reviewReason: 'amount_precision' });
  });

  it('a PENDING realWin finer than the currency flags without touching money', () => {
    const state = S({ status: 1, realWin: '3.0001' });
    expect(admitDeferredOperations(state, [], 3)).toEqual({
      admitted: [],
      state: { ...state, needsReview: true, reviewReason: 'amount_precision' },
    });
  });
});
