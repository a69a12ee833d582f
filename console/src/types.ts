/**
 * The API's records as the console reads them: names for the schemas of `openapi.json`, whose
 * types `npm run openapi` generates into `api.gen.ts` (docs/console.md, "API types"). A record the
 * console reads differently from the document is a wrong document: fix the DTO's `@ApiProperty`
 * and run `npm run openapi`, do not add a field here.
 */
import type { components } from './api.gen';

type Schemas = components['schemas'];

export type WhoAmI = Schemas['WhoAmIView'];

export type Overview = Schemas['OverviewView'];
export type DeliverySeries = Schemas['DeliverySeriesView'];
/** The overview's figures of an outbox (the wallet's, a publisher's). */
export type OutboxFigures = Schemas['WalletOutboxOverviewView'] | Schemas['PublisherOverviewView'];

export type SearchResult = Schemas['SearchResultView'];

export type CouponPage = Schemas['CouponPageView'];
export type Coupon = Schemas['CouponView'];
export type SnapshotPage = Schemas['SnapshotPageView'];
export type Resolution = Schemas['ResolutionView'];

export type QuarantinePage = Schemas['QuarantinePageView'];
export type QuarantineDetail = Schemas['QuarantineEntryDetailView'];

export type DeliveryAttempt = Schemas['DeliveryAttemptView'];
export type DeliveryPage = Schemas['DeliveryPageView'];
export type BatchAudit = Schemas['BatchAuditView'];

export type OutboxPage = Schemas['OutboxPageView'];
export type OutboxDetail = Schemas['OutboxEntryDetailView'];
export type WalletStatus = Schemas['WalletStatusView'];
/** One publisher's entry of `GET /events/status`. */
export type PublisherStatus = Schemas['PublisherStatusView'];
/** `GET /wallet/status`, or one publisher's entry of `GET /events/status`. */
export type OutboxStatus = WalletStatus | PublisherStatus;

export type AccountPage = Schemas['AccountPageView'];
export type Statement = Schemas['StatementPageView'];

export type OperatorActionPage = Schemas['OperatorActionPageView'];

export type BulkKind = Schemas['BulkPlanDto']['kind'];
export type BulkPlan = Schemas['BulkPlanView'];
export type BulkAction = Schemas['BulkActionView'];
export type BulkActionPage = Schemas['BulkActionPageView'];
export type BulkDetail = Schemas['BulkActionDetailView'];
