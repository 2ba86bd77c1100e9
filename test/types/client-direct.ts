/**
 * Compiled by the typecheck step (`tsc`, `npm test`), never run: each `@ts-expect-error` below must
 * be an error, or tsc fails on the unused directive. A direct client is typed from the registry
 * object it is given, as the HTTP client is from `typeof registry`.
 */
import { directClient, type KajClient } from '../../client/direct.js';
import { registry } from '../../tasks/index.js';

const kaj = directClient({ registry, producer: process.env.KAJ_PRODUCER_CONFIG ?? '' });
const sameClass: KajClient<typeof registry> = kaj;

export async function typedDirect(): Promise<void> {
  await sameClass.submit('send_email', { to: 'ada@example.com', subject: 'Hi' });
  await kaj.submit('send_email', { to: 'ada@example.com', subject: 'Hi' }, { priority: 'high', idempotencyKey: 'k' });
  // @ts-expect-error `to` must be a string
  await kaj.submit('send_email', { to: 1, subject: 'Hi' });
  // @ts-expect-error no such task type
  await kaj.submit('send_emial', { to: 'ada@example.com', subject: 'Hi' });
  // @ts-expect-error a batch item's payload is typed too
  await kaj.submitMany([{ type: 'send_email', payload: { to: 2, subject: 's' } }]);
  // @ts-expect-error the registry object is required (its schemas validate here)
  directClient({ producer: '' });
}
