import { csvStream, textCell } from '../../src/platform/common/csv.js';

// CSV injection (hostile report 2, finding 3): a cell that starts like a formula, also after
// leading white space or invisible characters, is prefixed with ' so a spreadsheet shows text.

describe('textCell', () => {
  it.each([
    ['=1+2', "'=1+2"],
    ['+1', "'+1"],
    ['-1', "'-1"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\uFF1D1+2', "'\uFF1D1+2"],
    ['\uFF0B1', "'\uFF0B1"],
    ['\uFF0D1', "'\uFF0D1"],
    ['\uFF20x', "'\uFF20x"],
    ['\t1', "'\t1"],
    ['\r1', "'\r1"],
    ['\n1', "'\n1"],
    ['\n=1+2', "'\n=1+2"],
    [' =1+2', "' =1+2"],
    ['   +1', "'   +1"],
    ['\u00a0=1+2', "'\u00a0=1+2"],
    ['\u200b=1+2', "'\u200b=1+2"],
    ['\u200c-1', "'\u200c-1"],
    ['\u200d@x', "'\u200d@x"],
    ['\ufeff=1+2', "'\ufeff=1+2"],
    ['\u2060=1+2', "'\u2060=1+2"],
    [' \u200b\u00a0\ufeff =1+2', "' \u200b\u00a0\ufeff =1+2"],
    [' \uFF1D1', "' \uFF1D1"],
  ])('%j → %j', (value, cell) => {
    expect(textCell(value)).toBe(cell);
  });

  it.each([
    ['000000000272', '000000000272'],
    ['a=1+2', 'a=1+2'],
    [' a=1', ' a=1'],
    ['\u200bx', '\u200bx'],
    ['', ''],
    [' ', ' '],
    ['000000000272:0:stake_debit', '000000000272:0:stake_debit'],
  ])('%j stays %j', (value, cell) => {
    expect(textCell(value)).toBe(cell);
  });

  it('null → empty', () => {
    expect(textCell(null)).toBe('');
  });
});

describe('csvStream with textCell', () => {
  it('writes the prefixed cells, quoting those with a line break', async () => {
    const records = (async function* () {
      yield [
        ['1', textCell('\n=1+2'), textCell(' =1+2')],
        ['2', textCell('\u200b=1+2'), textCell('ok')],
      ];
    })();
    let text = '';
    for await (const chunk of csvStream(['id', 'a', 'b'], records)) text += String(chunk);
    expect(text).toBe("id,a,b\r\n1,\"'\n=1+2\",' =1+2\r\n2,'\u200b=1+2,ok\r\n");
  });
});
