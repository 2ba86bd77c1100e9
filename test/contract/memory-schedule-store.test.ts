/** The `ScheduleStore` contract on the in-memory fake the scheduler's unit tests use. */
import { MemoryScheduleStore } from '../../testing/memory-schedule-store.js';
import { scheduleStoreContract } from './schedule-store.contract.js';

scheduleStoreContract('MemoryScheduleStore', async () => ({
  store: new MemoryScheduleStore(),
  cleanup: async () => {},
}));
