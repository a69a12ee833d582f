import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { Page } from 'playwright-core';

/** axe-core's browser build (the devDependency `axe-core`), read once. */
const AXE_SOURCE = readFileSync(
  createRequire(resolve('package.json')).resolve('axe-core/axe.min.js'),
  'utf8',
);

/** One axe-core rule a page breaks: its id and impact, and the first elements that break it. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * Runs axe-core (every rule but the experimental ones: WCAG 2.x A and AA, best practices) on the
 * page as it is now and returns its violations of impact `serious` or `critical`. axe is put into
 * the page through the DevTools protocol, which the console's CSP (`script-src 'self'`) does not
 * govern; nothing is loaded from elsewhere.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE_SOURCE);
  // (Page code as text: the tests compile without the DOM's types.)
  const violations = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
    })))`)) as AxeViolation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
