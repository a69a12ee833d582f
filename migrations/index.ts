import { InitialSchema1764490000000 } from './1764490000000-InitialSchema.js';
import { Reconciliation1764500000000 } from './1764500000000-Reconciliation.js';
import { CallbackInbox1764510000000 } from './1764510000000-CallbackInbox.js';
import { CallbackHotPath1764580000000 } from './1764580000000-CallbackHotPath.js';
import { CurrencyPrecision1764590000000 } from './1764590000000-CurrencyPrecision.js';
import { ApiKeyActors1796140048806 } from './1796140048806-ApiKeyActors.js';
import { WalletOutbox1796143780085 } from './1796143780085-WalletOutbox.js';
import { InboxPendingCoupons1796255594454 } from './1796255594454-InboxPendingCoupons.js';
import { WalletSkipKeepsParkedReason1796401887278 } from './1796401887278-WalletSkipKeepsParkedReason.js';
import { OperatorConsole1796402000000 } from './1796402000000-OperatorConsole.js';
import { SettlementEvents1796500000000 } from './1796500000000-SettlementEvents.js';
import { WalletStatusNeverChanged1796510000000 } from './1796510000000-WalletStatusNeverChanged.js';
import { RetentionPartitions1796600000000 } from './1796600000000-RetentionPartitions.js';
import { RetentionAgeIndexes1796600100000 } from './1796600100000-RetentionAgeIndexes.js';
import { OperatorActionClientAddress1796610000000 } from './1796610000000-OperatorActionClientAddress.js';
import { TraceContext1796620000000 } from './1796620000000-TraceContext.js';
import { LeanerOutbox1796630000000 } from './1796630000000-LeanerOutbox.js';

/** Every migration, in order. A migration never changes after it lands; add a new file instead. */
export const MIGRATIONS = [
  InitialSchema1764490000000,
  Reconciliation1764500000000,
  CallbackInbox1764510000000,
  CallbackHotPath1764580000000,
  CurrencyPrecision1764590000000,
  ApiKeyActors1796140048806,
  WalletOutbox1796143780085,
  InboxPendingCoupons1796255594454,
  WalletSkipKeepsParkedReason1796401887278,
  OperatorConsole1796402000000,
  SettlementEvents1796500000000,
  WalletStatusNeverChanged1796510000000,
  RetentionPartitions1796600000000,
  RetentionAgeIndexes1796600100000,
  OperatorActionClientAddress1796610000000,
  TraceContext1796620000000,
  LeanerOutbox1796630000000,
];
