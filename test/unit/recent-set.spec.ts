import { RecentSet } from '../../src/platform/common/recent-set.js';

describe('RecentSet (process-local memory of committed batches and coupons)', () => {
  it('keeps at most its capacity, forgetting the string added longest ago; adding again refreshes', () => {
    const s = new RecentSet(3);
    for (const x of ['a', 'b', 'c']) s.add(x);
    s.add('a'); // now b, c, a
    s.add('d'); // b is forgotten
    expect(['a', 'b', 'c', 'd'].map((x) => s.has(x))).toEqual([true, false, true, true]);
    s.delete('c');
    expect([s.has('c'), s.hasAll(['a', 'd']), s.hasAll(['a', 'c']), s.hasAll([])]).toEqual([
      false,
      true,
      false,
      true,
    ]);
  });
});
