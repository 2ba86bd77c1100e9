/**
 * `kaj/client`: the typed client of the task API (README, "Calling Kaj from code").
 *
 * @module
 */
export { KajClient, type KajClientOptions, type SubmitOptions, type Submitted, type SubmittedItem } from './client.js';
export { KajApiError, KajClientError, KajTimeoutError, KajUnreachableError } from './errors.js';
export type { PayloadsOf } from '../task/define.js';
