import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { headingAnchors } from '../support/markdown.js';

// A clone of this repository carries its own specification, docs/contract.md (the contract the
// code and tests cite by §): nothing in the README or docs/ may point at the shared folder beside
// it, the contract keeps every section §1..§11, and every § cited anywhere and every link into it
// resolves. .env.example's scope comment names every route of each scope of docs/api.md.

const ROOT = process.cwd();
const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');

/** Files under `dir` (relative to the repository) whose names end with one of `extensions`. */
function filesUnder(dir: string, extensions: string[]): string[] {
  return readdirSync(resolve(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(resolve(ROOT, path)).isDirectory()) return filesUnder(path, extensions);
    return extensions.some((e) => name.endsWith(e)) ? [path] : [];
  });
}

const DOCS = ['README.md', ...filesUnder('docs', ['.md'])];
const CONTRACT = read('docs/contract.md');

const CONTRACT_ANCHORS = headingAnchors(CONTRACT);

describe('the repository documents its own contract', () => {
  it.each(DOCS)('%s links nothing in the shared folder beside the repository', (path) => {
    const lines = read(path)
      .split('\n')
      .map((line, i) => `${i + 1}: ${line}`)
      .filter((line) => /(\.\.\/)+shared\//.test(line));
    expect(lines).toEqual([]);
  });

  it('docs/contract.md has the sections §1 … §11, once each and in order, and says what it restates', () => {
    const sections = [...CONTRACT.matchAll(/^## §(\d+) /gm)].map((m) => Number(m[1]));
    expect(sections).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(CONTRACT.split('\n## ')[0]).toMatch(
      /restates, inside the repository, the contract this project implements/,
    );
  });

  it('every § cited in code, tests and docs is a section of docs/contract.md', () => {
    const sections = new Set([...CONTRACT.matchAll(/^## §(\d+) /gm)].map((m) => m[1]));
    const files = [
      ...DOCS,
      ...['src', 'test', 'sim', 'bench', 'migrations'].flatMap((d) => filesUnder(d, ['.ts'])),
    ];
    const unknown = files.flatMap((path) =>
      [...read(path).matchAll(/§(\d+)/g)].filter((m) => !sections.has(m[1])).map((m) => `${path}: §${m[1]}`),
    );
    expect(unknown).toEqual([]);
  });

  it('every link into docs/contract.md names one of its headings', () => {
    const broken = DOCS.flatMap((path) =>
      [...read(path).matchAll(/\]\((?:docs\/)?contract\.md#([^)]+)\)/g)]
        .filter((m) => !CONTRACT_ANCHORS.has(m[1]))
        .map((m) => `${path}: #${m[1]}`),
    );
    expect(broken).toEqual([]);
    expect(DOCS.filter((path) => /\]\((?:docs\/)?contract\.md[#)]/.test(read(path)))).toContain('README.md');
  });
});

describe(".env.example's scope comment", () => {
  /** docs/api.md's scope table: scope → the routes it opens. */
  const table = new Map(
    [...read('docs/api.md').matchAll(/^\| `(read|register|money|operate)` \| (.+) \|$/gm)].map((m) => [
      m[1],
      [...m[2].matchAll(/`(?:GET|POST) ([^`]+)`/g)].map((r) => r[1]),
    ]),
  );
  /** The comment above OPS_API_KEYS: scope → its text (an indented entry and its continuation lines). */
  const comment = new Map<string, string>();
  let current: string | undefined;
  for (const line of read('.env.example').split('\n')) {
    if (line.startsWith('OPS_API_KEYS=')) break;
    const entry = /^# {3}(read|register|money|operate) +(.*)$/.exec(line);
    if (entry) comment.set((current = entry[1]), entry[2]);
    else if (current && /^# {4,}/.test(line))
      comment.set(current, `${comment.get(current)} ${line.slice(1).trim()}`);
    else current = undefined;
  }

  it('has one entry per scope of docs/api.md', () => {
    expect([...table.keys()]).toEqual(['read', 'register', 'money', 'operate']);
    expect([...comment.keys()]).toEqual(['read', 'register', 'money', 'operate']);
  });

  it.each(['read', 'register', 'money', 'operate'])(
    'names what each route of %s does (its last path word: retry, skip, pause, resume …)',
    (scope) => {
      const words = table.get(scope)!.map((route) =>
        route
          .split('/')
          .filter((part) => part && !part.startsWith('{'))
          .pop(),
      );
      expect(words.length).toBeGreaterThan(0);
      expect(words.filter((word) => !comment.get(scope)!.includes(word!))).toEqual([]);
    },
  );
});
