/** The `TaskStore` contract on the in-memory fake the unit tests use, in both of its modes. */
import { MemoryTaskStore } from '../../testing/memory-task-store.js';
import { describeTaskStoreContract } from './task-store.contract.js';

// As DynamoDB (and moto): a failed condition carries the item as stored.
describeTaskStoreContract('MemoryTaskStore', async () => ({ store: new MemoryTaskStore(), cleanup: async () => {} }), {
  conditionFailureReturnsItem: true,
});

// As dynalite (`npm start`): a failed condition carries no item; callers fall back to get.
describeTaskStoreContract(
  'MemoryTaskStore({ conditionFailureReturnsItem: false })',
  async () => ({ store: new MemoryTaskStore({ conditionFailureReturnsItem: false }), cleanup: async () => {} }),
  { conditionFailureReturnsItem: false },
);
