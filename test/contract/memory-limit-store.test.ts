/** The `LimitStore` contract on the in-memory fake the limiter's unit tests use. */
import { MemoryLimitStore } from '../../testing/memory-limit-store.js';
import { limitStoreContract } from './limit-store.contract.js';

limitStoreContract('MemoryLimitStore', async () => ({
  store: new MemoryLimitStore(),
  cleanup: async () => {},
}));
