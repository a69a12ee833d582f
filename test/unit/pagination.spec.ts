import { Readable } from 'node:stream';
import { csvStream, textCell } from '../../src/platform/common/csv.js';
import { DomainException } from '../../src/platform/common/domain.exception.js';
import { Cursor, CURSOR_PART, toPage } from '../../src/platform/common/pagination.js';

// The lists' one cursor codec and page rule, and the CSV export's cell rules (issue 30,
// docs/api.md#lists-and-pages, #accounts-and-statements).

describe('Cursor', () => {
  it('an id is its own cursor, as the older lists answer; a composite key is opaque base64url', () => {
    expect(Cursor.encode(['1841'])).toBe('1841');
    const composite = Cursor.encode(['2026-11-30T12:00:00.500000Z', '000000000272']);
    expect(composite).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Cursor.decode(composite, [CURSOR_PART.time, CURSOR_PART.text])).toEqual([
      '2026-11-30T12:00:00.500000Z',
      '000000000272',
    ]);
    expect(Cursor.decode('1841', [CURSOR_PART.id])).toEqual(['1841']);
  });

  it.each([
    ['not base64url', 'a b', [CURSOR_PART.id]],
    ['another list’s cursor', Cursor.encode(['x', 'y']), [CURSOR_PART.id]],
    ['an id for a composite key', '1841', [CURSOR_PART.time, CURSOR_PART.text]],
    ['a part of the wrong shape', Cursor.encode(['yesterday', 'C-1']), [CURSOR_PART.time, CURSOR_PART.text]],
    ['zero', '0', [CURSOR_PART.id]],
  ])('%s is a 400 at cursor', (_, cursor, shape) => {
    expect(() => Cursor.decode(cursor, shape)).toThrow(DomainException);
    try {
      Cursor.decode(cursor, shape);
    } catch (err) {
      expect((err as DomainException).fields).toEqual([
        { path: 'cursor', message: 'cursor must be the nextCursor of a page of this list' },
      ]);
    }
  });

  it('toPage keeps `limit` rows and names the last when one more was read', () => {
    const view = (r: { id: string }) => r.id;
    expect(toPage([{ id: '9' }, { id: '8' }, { id: '7' }], 2, (r) => [r.id], view)).toEqual({
      items: ['9', '8'],
      nextCursor: '8',
    });
    expect(toPage([{ id: '9' }, { id: '8' }], 2, (r) => [r.id], view)).toEqual({
      items: ['9', '8'],
      nextCursor: null,
    });
    expect(toPage([], 2, (r: { id: string }) => [r.id], view)).toEqual({ items: [], nextCursor: null });
  });
});

describe('CSV export', () => {
  it('neutralises text cells that start like a formula, not others', () => {
    expect(
      ['=1+2', '+1', '-1', '@SUM(A1)', '\tx', '\rx', '\uFF1D1', 'plain', 'a=b', ''].map(textCell),
    ).toEqual(["'=1+2", "'+1", "'-1", "'@SUM(A1)", "'\tx", "'\rx", "'\uFF1D1", 'plain', 'a=b', '']);
    expect(textCell(null)).toBe('');
  });

  it('writes RFC 4180: CRLF, quotes around commas, quotes and line breaks, quotes doubled', async () => {
    const pages = (async function* () {
      yield [['1', 'a,b', '-10.00']];
      yield [['2', 'say "hi"', 'x\ny']];
    })();
    const text = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const stream: Readable = csvStream(['id', 'text', 'amount'], pages);
      stream.on('data', (c: Buffer | string) => chunks.push(Buffer.from(c)));
      stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      stream.on('error', reject);
    });
    expect(text).toBe('id,text,amount\r\n1,"a,b",-10.00\r\n2,"say ""hi""","x\ny"\r\n');
  });
});
