/**
 * Compiled by the typecheck step (`tsc`, `npm test`), never run: each `@ts-expect-error` below must
 * be an error, or tsc fails on the unused directive. The client types payloads from the registry.
 */
import { KajClient } from '../../client/index.js';
import type { registry } from '../../tasks/index.js';

const kaj = new KajClient<typeof registry>({ url: 'http://localhost:3000' });

export async function typed(): Promise<void> {
  await kaj.submit('send_email', { to: 'ada@example.com', subject: 'Hi' });
  await kaj.submit('send_email', { to: 'ada@example.com', subject: 'Hi' }, { priority: 'high', idempotencyKey: 'k' });
  // @ts-expect-error `to` must be a string
  await kaj.submit('send_email', { to: 1, subject: 'Hi' });
  // @ts-expect-error `subject` is required
  await kaj.submit('send_email', { to: 'ada@example.com' });
  // @ts-expect-error no such task type
  await kaj.submit('send_emial', { to: 'ada@example.com', subject: 'Hi' });
  // @ts-expect-error not a priority
  await kaj.submit('send_email', { to: 'ada@example.com', subject: 'Hi' }, { priority: 'urgent' });
  await kaj.submitMany([{ type: 'send_email', payload: { to: 'a@b.co', subject: 's' } }]);
  // @ts-expect-error a batch item's payload is typed too
  await kaj.submitMany([{ type: 'send_email', payload: { to: 2, subject: 's' } }]);
}
