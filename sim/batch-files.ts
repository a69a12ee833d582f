import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { CouponSnapshot } from './model.js';

/** The manifest that `generate` writes beside the batch files; never sent as a batch. */
export const MANIFEST_FILE = 'coupons.json';

/**
 * The batch files behind FILE|DIR: a file as it is; a folder's `*.json` files except
 * `coupons.json`, in file-name order (plain code-unit order, so `0002.json` before `0010.json`
 * when names are zero-padded as `generate` writes them).
 */
export async function listBatchFiles(path: string): Promise<string[]> {
  const info = await stat(path);
  if (!info.isDirectory()) return [path];
  const names = (await readdir(path, { withFileTypes: true }))
    .filter((d) => d.isFile() && d.name.endsWith('.json') && d.name !== MANIFEST_FILE)
    .map((d) => d.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return names.map((name) => join(path, name));
}

/** batchId and couponCount of a batch body, when it is JSON of that shape (for reports only). */
export function describeBatch(bytes: Buffer | string): {
  batchId: string | null;
  couponCount: number | null;
} {
  try {
    const body = JSON.parse(bytes.toString()) as { batchId?: unknown; couponCount?: unknown };
    return {
      batchId: typeof body.batchId === 'string' ? body.batchId : null,
      couponCount: typeof body.couponCount === 'number' ? body.couponCount : null,
    };
  } catch {
    return { batchId: null, couponCount: null };
  }
}

/**
 * Every coupon's latest state in a sequence of batch files, as SportAPI's coupon read method
 * (CONTRACT §9) would answer it: the files are read in order, a batchId seen before (a
 * redelivery) is skipped, and the last snapshot of each coupon wins. Files that are not a
 * batch (no `coupons` array) are ignored.
 */
export async function latestCouponStates(path: string): Promise<Map<string, CouponSnapshot>> {
  const latest = new Map<string, CouponSnapshot>();
  const seen = new Set<string>();
  for (const file of await listBatchFiles(path)) {
    let body: { batchId?: unknown; coupons?: unknown };
    try {
      body = JSON.parse(await readFile(file, 'utf8')) as typeof body;
    } catch {
      continue;
    }
    if (!Array.isArray(body.coupons)) continue;
    if (typeof body.batchId === 'string') {
      if (seen.has(body.batchId)) continue;
      seen.add(body.batchId);
    }
    for (const coupon of body.coupons as CouponSnapshot[]) {
      if (coupon && typeof coupon.coupon_code === 'string') latest.set(coupon.coupon_code, coupon);
    }
  }
  return latest;
}
