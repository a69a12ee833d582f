import { readFileSync } from 'node:fs';
import ts from 'typescript';

// Issue 43: a settlement hook gets a narrow transaction (HookTx: query, timeLeft, deadline), not
// Tx; a hook that tries to commit, roll back or open a savepoint fails to compile. The fixture is
// compiled as it is (every `@ts-expect-error` met: no error), then with the directives removed
// (each of those lines is an error naming the member).

const FIXTURE = 'test/unit/fixtures/hook-tx.types.ts';

function diagnostics(text: string): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    'tsconfig.json',
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: () => undefined,
    },
  );
  if (!config) throw new Error('tsconfig.json not read');
  const host = ts.createCompilerHost(config.options);
  const read = host.getSourceFile.bind(host);
  const fixture = ts.sys.resolvePath(FIXTURE);
  host.getSourceFile = (name, language, ...rest) =>
    ts.sys.resolvePath(name) === fixture
      ? ts.createSourceFile(name, text, language)
      : read(name, language, ...rest);
  const program = ts.createProgram([fixture], { ...config.options, noEmit: true }, host);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file && ts.sys.resolvePath(d.file.fileName) === fixture)
    .map((d) => {
      const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
      return `${line + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
}

describe('the transaction a settlement hook gets (type test)', () => {
  const source = readFileSync(FIXTURE, 'utf8');

  it('compiles what a hook may do, and each forbidden call is an expected error', () => {
    expect(diagnostics(source)).toEqual([]);
  }, 60_000);

  it('without the directives, commit, rollback, finish, savepoint, send, manager and afterCommit do not exist', () => {
    const errors = diagnostics(source.replace(/^\s*\/\/ @ts-expect-error.*$/gm, ''));
    const members = errors.map((e) => /Property '(\w+)' does not exist on type 'HookTx'/.exec(e)?.[1]);
    expect(members).toEqual([
      'commitWith',
      'rollback',
      'finish',
      'savepoint',
      'send',
      'manager',
      'afterCommit',
    ]);
  }, 60_000);
});
