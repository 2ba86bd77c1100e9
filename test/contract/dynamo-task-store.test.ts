/**
 * The `TaskStore` contract on `DynamoTaskStore`, on every emulator target (`targets()`: embedded
 * dynalite, moto when installed, `KAJ_TEST_ENDPOINT`), on a table made per file from the runtime's
 * own definition (`ensureResources` of local/bootstrap.ts, from shared/config/resources.ts) and
 * deleted afterwards.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe } from 'vitest';
import { deleteResources, ensureResources } from '../../local/bootstrap.js';
import { DynamoTaskStore } from '../../shared/aws/dynamo-task-store.js';
import { emulatorClientConfig, startEndpoints } from '../support/emulator-endpoints.js';
import { targets, type Target } from '../support/targets.js';
import { uniquePrefix } from '../../testing/wait.js';
import { describeTaskStoreContract, type TaskStoreContractOptions } from './task-store.contract.js';

/** How each emulator departs from DynamoDB, where the contract notices. */
function optionsFor(target: Target): TaskStoreContractOptions {
  switch (target.name) {
    case 'embedded':
      // dynalite 4.0.0 ignores ReturnValuesOnConditionCheckFailure.
      return { conditionFailureReturnsItem: false };
    case 'moto':
      return {
        conditionFailureReturnsItem: true,
        knownFailures: {
          numberUnderflow:
            'moto refuses such a number in PutItem but stores it from an UpdateItem SET; DynamoDB (and dynalite) refuse both',
          zeroLimit:
            'moto answers Limit 0 with a body the SDK cannot parse (SyntaxError: StoreUnavailableError), not a ValidationException',
        },
      };
    default:
      return { conditionFailureReturnsItem: undefined };
  }
}

describe.each(targets())('DynamoTaskStore on $name', (target) => {
  let dynamodb: DynamoDBClient | undefined;
  let sqs: SQSClient | undefined;
  let tableName = '';
  let prefix = '';
  let stop: () => Promise<void> = async () => {};

  beforeAll(async () => {
    const started = await startEndpoints(target);
    stop = started.stop;
    dynamodb = new DynamoDBClient(emulatorClientConfig(started.endpoints.dynamodb));
    sqs = new SQSClient(emulatorClientConfig(started.endpoints.sqs));
    prefix = uniquePrefix('store-contract');
    ({ tableName } = await ensureResources({ sqs, dynamodb }, prefix));
  });

  afterAll(async () => {
    if (dynamodb !== undefined && sqs !== undefined && prefix !== '') await deleteResources({ sqs, dynamodb }, prefix);
    dynamodb?.destroy();
    sqs?.destroy();
    await stop();
  });

  describeTaskStoreContract(
    `DynamoTaskStore (${target.name})`,
    async () => {
      if (dynamodb === undefined) throw new Error('the emulator did not start');
      return { store: new DynamoTaskStore(dynamodb, tableName), cleanup: async () => {} };
    },
    optionsFor(target),
  );
});
