/**
 * Where the browser suite finds Chromium: `KAJ_CHROMIUM`, else Debian's `chromium` (which
 * `.ci/run` installs). Without one the suite is skipped with a reason — except in CI (`CI` set),
 * where a missing browser fails it.
 */
import { existsSync } from 'node:fs';

const CANDIDATES = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
];

export const CHROMIUM: string | undefined = process.env.KAJ_CHROMIUM || CANDIDATES.find((p) => existsSync(p));

const ci = process.env.CI;
export const IN_CI = ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0';

const HOW =
  'no Chromium found (looked for $KAJ_CHROMIUM, /usr/bin/chromium). ' +
  'To run it: sudo apt-get install -y chromium (Debian/Ubuntu; or set KAJ_CHROMIUM=/path/to/chrome), then ' +
  'npx vitest run test/integration/console/browser.test.ts';

export const SKIP_REASON = `browser suite SKIPPED: ${HOW}`;

if (CHROMIUM === undefined) {
  if (IN_CI)
    throw new Error(
      `CI must run the browser suite, but no Chromium is installed (.ci/run installs it). ${SKIP_REASON}`,
    );
  process.stderr.write(`\n${SKIP_REASON}\n\n`);
}
