import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { format, resolveConfig } from 'prettier';

// Issue 43: the console's API types (console/src/api.gen.ts) are generated from openapi.json by
// `npm run openapi` (its `openapi:console` step: openapi-typescript, then Prettier). The committed
// file is what that step writes from the committed openapi.json, so neither drifts from the other.

const ROOT = process.cwd();
const GENERATED = 'console/src/api.gen.ts';

describe('the console types', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'console-types-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('api.gen.ts is current (run `npm run openapi` after changing an endpoint or a DTO)', async () => {
    const { scripts } = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    // The generator's command as the script runs it, into a scratch file.
    const [generate, prettify] = scripts['openapi:console'].split(' && ');
    expect(prettify).toBe(`prettier --write ${GENERATED}`);
    const target = join(dir, 'api.gen.ts');
    const run = spawnSync('sh', ['-c', generate.replace(GENERATED, target)], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, PATH: `${resolve(ROOT, 'node_modules/.bin')}${delimiter}${process.env.PATH}` },
    });
    expect(run.status).toBe(0);
    // Prettier with the repository's settings, as if the file were in its place.
    const filepath = resolve(ROOT, GENERATED);
    const expected = await format(readFileSync(target, 'utf8'), {
      ...(await resolveConfig(filepath)),
      filepath,
    });
    expect(expected === readFileSync(filepath, 'utf8')).toBe(true);
  }, 60_000);
});
