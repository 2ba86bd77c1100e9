/**
 * Writes the task API's OpenAPI 3.1 document for this repository's task types to
 * `docs/openapi.json` (what `GET /api/v1/openapi.json` serves):
 *
 *   npm run openapi           write it
 *   npm run openapi -- --check  exit 1 when the file is not what the code generates
 *
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { openApiDocument } from '../shared/service/api/openapi.js';
import { registry } from '../tasks/index.js';

const FILE = new URL('../docs/openapi.json', import.meta.url);
const text = `${JSON.stringify(openApiDocument(registry, { schedules: true }), null, 2)}\n`;
if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(FILE, 'utf8');
  } catch {
    // Missing: not up to date.
  }
  if (current !== text) {
    process.stderr.write('docs/openapi.json is not what the code generates: run npm run openapi\n');
    process.exit(1);
  }
} else {
  writeFileSync(FILE, text);
  process.stdout.write(`wrote docs/openapi.json (${text.length} bytes)\n`);
}
