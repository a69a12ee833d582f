import { StatusKind } from './settlement.types.js';

/**
 * Maps SportAPI coupon status codes to {@link StatusKind}s (CONTRACT §6); any code missing from
 * the map is UNKNOWN. Built from the validated `STATUS_MAP` configuration.
 */
export class StatusMap {
  private readonly kinds: Map<number, StatusKind>;

  constructor(map: Record<number, string>) {
    this.kinds = new Map(Object.entries(map).map(([code, kind]) => [Number(code), kind as StatusKind]));
  }

  /** Kind of a status code; UNKNOWN when the code is not mapped. */
  kindOf(status: number): StatusKind {
    return this.kinds.get(status) ?? StatusKind.UNKNOWN;
  }
}
