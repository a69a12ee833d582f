import { Inject, Injectable } from '@nestjs/common';
import { EVENTS_CONFIG } from '../../outbound/events/events.config.js';
import type { EventsConfig } from '../../outbound/events/events.config.js';
import { MONEY_CONFIG } from '../../core/ledger/money.config.js';
import type { MoneyConfig } from '../../core/ledger/money.config.js';
import { SETTLEMENT_CONFIG } from '../../core/settlement/settlement.config.js';
import type { SettlementConfig } from '../../core/settlement/settlement.config.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import type { DeliverySeriesView, OverviewView, SearchHitView, SearchResultView } from './dto/console.dto.js';
import {
  CountedOutcome,
  DAY_MINUTES,
  DELIVERY_OUTCOMES,
  MinuteCounts,
  OutboxFigures,
  OverviewRepository,
} from './overview.repository.js';
import { SearchHit, SearchRepository } from './search.repository.js';

/** A row id that fits a bigint: the numeric kinds of the search probe it. */
const ROW_ID = /^[1-9]\d{0,17}$/;

const enc = encodeURIComponent;

/**
 * `GET /search` and `GET /overview` (docs/api.md#operator-console-api): one box for any id, and
 * the first screen's figures.
 */
@Injectable()
export class ConsoleService {
  constructor(
    @Inject(EVENTS_CONFIG) private readonly events: EventsConfig,
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    @Inject(SETTLEMENT_CONFIG) private readonly settlement: SettlementConfig,
    private readonly transactions: TransactionRunner,
    private readonly search: SearchRepository,
    private readonly overviewRows: OverviewRepository,
  ) {}

  /** Every record whose id is `q` (accounts: whose id starts with it; outbox rows: also their operation key), each an index probe. */
  async find(q: string): Promise<SearchResultView> {
    const text = q.trim();
    const hits = await this.transactions.run((tx) =>
      this.search.probe(tx, text, ROW_ID.test(text) ? text : null),
    );
    return { q: text, items: hits.map((h) => this.describe(h)) };
  }

  /** The figures of the console's first screen, each read over an index. */
  async overview(): Promise<OverviewView> {
    const { deliveries, backlogs } = await this.transactions.run(async (tx) => ({
      deliveries: await this.overviewRows.deliveries(tx),
      backlogs: await this.overviewRows.backlogs(tx, this.events.publishers),
    }));
    const minuteNow = Math.floor(deliveries.now.getTime() / 60_000) * 60_000;
    const series = (minutes: number): DeliverySeriesView => {
      const from = minuteNow - (minutes - 1) * 60_000;
      const counts = Object.fromEntries(
        DELIVERY_OUTCOMES.map((o) => [o, new Array<number>(minutes).fill(0)]),
      ) as Record<CountedOutcome, number[]>;
      for (const m of deliveries.minutes) {
        const i = (new Date(m.minute).getTime() - from) / 60_000;
        if (i < 0 || i >= minutes) continue;
        for (const o of DELIVERY_OUTCOMES) counts[o][i] += Number(m[o as keyof MinuteCounts]);
      }
      return {
        from: new Date(from).toISOString(),
        minutes,
        series: counts,
        totals: Object.fromEntries(DELIVERY_OUTCOMES.map((o) => [o, counts[o].reduce((a, b) => a + b, 0)])),
      };
    };
    const b = backlogs;
    return {
      generatedAt: deliveries.now.toISOString(),
      deliveries: {
        lastHour: series(60),
        lastDay: series(DAY_MINUTES),
        rolledUntil: deliveries.rolledUntil ? new Date(deliveries.rolledUntil).toISOString() : null,
      },
      coupons: {
        needsReview: b.needsReview,
        byReviewReason: b.byReviewReason ?? {},
        unallocated: b.unallocated,
      },
      quarantine: {
        notReplayed: b.quarantineNotReplayed,
        oldestNotReplayedAt: b.oldestNotReplayedAt ? new Date(b.oldestNotReplayedAt).toISOString() : null,
      },
      inbox: { pending: b.inboxPending, oldestPendingAgeSeconds: round(b.inboxOldestAgeSeconds) },
      walletOutbox: figures(b.walletOutbox),
      events: b.events.map((e) => ({ publisher: e.publisher, ...figures(e) })),
    };
  }

  /** The label and API path of a hit. */
  private describe(h: SearchHit): SearchHitView {
    const v = h as Record<string, string | number | boolean | null>;
    const id = String(v.id);
    const money = (amount: unknown, currency: unknown) =>
      `${this.money.currencies.format(String(amount), String(currency))} ${String(currency)}`;
    switch (h.kind) {
      case 'batch':
        return {
          kind: h.kind,
          id,
          label: `batch ${id}: ${
            v.committedAt
              ? `committed ${new Date(v.committedAt as unknown as Date).toISOString()}, ${v.couponCount} coupon(s)`
              : 'not committed'
          }, ${v.attempts} delivery attempt(s)${v.quarantined ? `, ${v.quarantined} quarantined` : ''}`,
          link: `/callbacks/batches/${enc(id)}`,
        };
      case 'coupon':
        return {
          kind: h.kind,
          id,
          label: `coupon ${id}: ${v.accountId === null ? 'unallocated' : `${String(v.accountId)}, ${String(v.currency)}`}, status ${
            v.status === null || v.status === undefined
              ? 'none yet'
              : // With its kind (CONTRACT §6, STATUS_MAP), as the console shows it: `2 WIN`.
                `${String(v.status)} ${this.settlement.statusMap[Number(v.status)] ?? 'UNKNOWN'}`
          }${v.needsReview ? `, needs review (${String(v.reviewReason)})` : ''}`,
          link: `/coupons/${enc(id)}`,
        };
      case 'bet':
        return {
          kind: h.kind,
          id,
          label: `bet ${id} of coupon ${String(v.couponCode)}: status ${String(v.status)}`,
          link: `/coupons/${enc(String(v.couponCode))}`,
        };
      case 'account':
        return {
          kind: h.kind,
          id,
          label: `account ${id}: ${money(v.balance, v.currency)}`,
          link: `/accounts/${enc(id)}`,
        };
      case 'operation':
        return {
          kind: h.kind,
          id,
          label: `${String(v.type)} ${money(v.amount, v.currency)} on ${String(v.accountId)}${
            v.couponCode ? ` (coupon ${String(v.couponCode)})` : ''
          }${v.batchId ? `, batch ${String(v.batchId)}` : ''}`,
          link: v.batchId
            ? `/callbacks/batches/${enc(String(v.batchId))}`
            : v.couponCode
              ? `/coupons/${enc(String(v.couponCode))}`
              : `/accounts/${enc(String(v.accountId))}/statement`,
        };
      case 'outbox':
        return {
          kind: h.kind,
          id,
          label: `outbox row ${id}: ${String(v.operationKey)} to ${String(v.accountId)}, ${String(v.status)}${
            v.parkedReason ? ` (${String(v.parkedReason)})` : ''
          }`,
          link: `/wallet/outbox/${id}`,
        };
      case 'event_outbox':
        return {
          kind: h.kind,
          id,
          label: `${String(v.publisher)} event row ${id}: ${String(v.operationKey)} of ${String(v.accountId)}, ${String(v.status)}${
            v.parkedReason ? ` (${String(v.parkedReason)})` : ''
          }`,
          link: `/events/${enc(String(v.publisher))}/outbox/${id}`,
        };
      case 'quarantine':
        return {
          kind: h.kind,
          id,
          label: `quarantined body ${id}: ${String(v.reason)}${v.batchId ? `, batch ${String(v.batchId)}` : ''}${
            v.replayOutcome ? `, replayed (${String(v.replayOutcome)})` : ', not replayed'
          }`,
          link: `/callbacks/quarantine/${id}`,
        };
      case 'inbox':
        return {
          kind: h.kind,
          id,
          label: `inbox row ${id}: ${String(v.status)}, batch ${String(v.batchId)}`,
          link: `/callbacks/batches/${enc(String(v.batchId))}`,
        };
      case 'delivery':
        return {
          kind: h.kind,
          id,
          label: `delivery attempt ${id}: ${String(v.outcome)} ${String(v.httpStatus)}${v.batchId ? `, batch ${String(v.batchId)}` : ''}`,
          link: v.batchId ? `/callbacks/batches/${enc(String(v.batchId))}` : `/callbacks/deliveries`,
        };
      case 'operator_action':
        return {
          kind: h.kind,
          id,
          label:
            `${String(v.action)} by ${String(v.actor)} on ${String(v.targetKind)} ${v.targetId ?? ''}: ${String(v.outcome)}`.replace(
              ' :',
              ':',
            ),
          link: `/operator-actions?actor=${enc(String(v.actor))}&action=${enc(String(v.action))}`,
        };
      default:
        return {
          kind: h.kind,
          id,
          label: `wallet delivery attempt ${String(v.attempt)} of outbox row ${String(v.outboxId)}: ${String(v.outcome)}${
            v.httpStatus === null ? '' : ` ${String(v.httpStatus)}`
          }`,
          link: `/wallet/outbox/${String(v.outboxId)}`,
        };
    }
  }
}

/** An outbox's figures as the overview shows them. */
function figures(f: OutboxFigures): OutboxFigures {
  return {
    paused: f.paused,
    pending: f.pending,
    parked: f.parked,
    skipped: f.skipped,
    oldestUndeliveredAgeSeconds: round(f.oldestUndeliveredAgeSeconds),
  };
}

/** Seconds to milliseconds' precision. */
function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}
