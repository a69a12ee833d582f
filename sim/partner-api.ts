import type { Manifest } from './generate.js';

/** The receiver's partner API (CONTRACT §10), as far as the simulator needs it. */

export interface ApiResponse {
  status: number;
  text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
}

export interface CouponView {
  coupon_code: string;
  accountId: string | null;
  status: number | null;
  realWin: string | null;
  settlementGeneration: number;
  needsReview: boolean;
  events: { uuid: string; status: number }[];
  operations: { key: string; type: string; generation: number; amount: string }[];
}

export class PartnerApi {
  constructor(
    private readonly baseUrl: string,
    private readonly opsKey: string,
    private readonly timeoutMs = 10_000,
  ) {}

  /**
   * One request; a transport error (no answer) is tried again up to 3 times in all, which is safe
   * because every call the simulator makes is idempotent (keyed deposits, same-body registration).
   */
  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse> {
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await fetch(new URL(path, this.baseUrl), {
          method,
          headers: {
            authorization: `Bearer ${this.opsKey}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          redirect: 'manual',
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (error) {
        const code = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
        if (attempt < 3) continue;
        throw new Error(`${method} ${new URL(path, this.baseUrl).toString()}: no answer (${code})`, {
          cause: error,
        });
      }
      const text = await response.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: response.status, text, json };
    }
  }

  /** A deposit (`POST /accounts/{id}/adjustments`); the key is 1..128 of `A-Za-z0-9._-`. */
  async deposit(accountId: string, amount: string, currency: string, idempotencyKey: string): Promise<void> {
    const res = await this.request(
      'POST',
      `/accounts/${encodeURIComponent(accountId)}/adjustments`,
      { amount, currency, reason: 'sportapi simulator deposit' },
      { 'idempotency-key': idempotencyKey },
    );
    if (res.status !== 201 && res.status !== 200) {
      throw new Error(`deposit to ${accountId}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
    }
  }

  /** Registers a placed coupon (`POST /coupons`; the same body again answers 200). */
  async registerCoupon(coupon: { coupon_code: string; accountId: string; stake: string; currency: string }) {
    const res = await this.request('POST', '/coupons', coupon);
    if (res.status !== 201 && res.status !== 200) {
      throw new Error(`register ${coupon.coupon_code}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
    }
  }

  async coupon(code: string): Promise<CouponView | null> {
    const res = await this.request('GET', `/coupons/${encodeURIComponent(code)}`);
    if (res.status === 404) return null;
    if (res.status !== 200) throw new Error(`GET /coupons/${code}: HTTP ${res.status}`);
    return res.json as CouponView;
  }

  async balance(accountId: string): Promise<string> {
    const res = await this.request('GET', `/accounts/${encodeURIComponent(accountId)}`);
    const balance = (res.json as { balance?: unknown } | undefined)?.balance;
    if (res.status !== 200 || typeof balance !== 'string') {
      throw new Error(`GET /accounts/${accountId}: HTTP ${res.status}`);
    }
    return balance;
  }
}

/**
 * Prepares a receiver for a generated sequence: deposits each account's `deposit` (idempotent by
 * its `depositKey`) and registers every coupon with its stake. Safe to run twice.
 */
export async function registerManifest(manifest: Manifest, api: PartnerApi): Promise<void> {
  for (const account of manifest.accounts) {
    await api.deposit(account.id, account.deposit, account.currency, account.depositKey);
  }
  for (const c of manifest.coupons) {
    await api.registerCoupon({
      coupon_code: c.coupon_code,
      accountId: c.accountId,
      stake: c.stake,
      currency: c.currency,
    });
  }
}
