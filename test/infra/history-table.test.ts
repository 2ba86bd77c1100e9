/**
 * The history table on AWS, read from the synthesized template: made only when a task type is a
 * workflow; its key schema, billing, TTL, recovery, encryption and retention; exactly what the
 * consumers (Query, PutItem, GetItem) and the API (Query) may do there, and that nothing else
 * may; their `KAJ_HISTORY_TABLE_NAME`; the `HistoryTableName` output; cdk-nag and cfn-lint; and that a stack
 * without workflows is exactly the stack it was, the one with them that stack plus the table.
 *
 * The stacks are synthesized without bundling the functions (their code does not matter here).
 */
import type { IConstruct } from 'constructs';
import * as z from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { largestEnvironmentBytes } from '../../infra/config.js';
import { HISTORY_TABLE_APPEND_ACTIONS, HistoryTable } from '../../infra/constructs/history-table.js';
import { OUTPUT_KEYS, parseStackOutputs } from '../../infra/outputs.js';
import { ENV, HISTORY_TABLE_SCHEMA, resourceNames } from '../../shared/config/resources.js';
import { defineTask, TaskRegistry } from '../../shared/task/define.js';
import { defineWorkflow } from '../../shared/workflow/define.js';
import { type CfnResourceJson, itPassesCfnLint, type SynthesizedKaj, synthKaj } from './synth.js';
import {
  getAtt,
  NO_BUNDLING,
  nagFindings,
  normalized,
  ofType,
  policyStatements,
  retainedTable,
  roleOf,
  type Statement,
  expectRetainedUnlessTold,
} from './template.js';

const SYNTH_TIMEOUT = 120_000;

const job = defineTask({ type: 'job', schema: z.object({}), handler: async () => ({}) });
const order = defineWorkflow({
  type: 'order',
  schema: z.object({ sku: z.string() }),
  run: async (input, wf) => wf.step('reserve', () => input.sku),
});
/** The same lanes (tasks/lanes.ts's) in both stacks: a lane's consumer gets the table too. */
const WITH_WORKFLOWS = new TaskRegistry([job, order]);
const WITHOUT_WORKFLOWS = new TaskRegistry([job]);

let withWorkflows: SynthesizedKaj;
let without: SynthesizedKaj;

beforeAll(() => {
  withWorkflows = synthKaj(undefined, NO_BUNDLING, { registry: WITH_WORKFLOWS });
  without = synthKaj(undefined, NO_BUNDLING, { registry: WITHOUT_WORKFLOWS });
}, SYNTH_TIMEOUT);

afterAll(() => {
  withWorkflows?.dispose();
  without?.dispose();
});

const props = (s: SynthesizedKaj, c: IConstruct) => s.resources[s.logicalId(c)]!.Properties;
const envOf = (s: SynthesizedKaj, fn: IConstruct) => props(s, fn).Environment.Variables as Record<string, unknown>;
const roleStatements = (s: SynthesizedKaj, fn: IConstruct): Statement[] =>
  policyStatements(s, roleOf(s.resources[s.logicalId(fn)]!));
const consumers = (s: SynthesizedKaj) => [s.stack.consumer, ...Object.values(s.stack.laneConsumers)];
const historyTable = (s: SynthesizedKaj) => {
  const t = s.stack.historyTable;
  expect(t, 'the history table').toBeDefined();
  return t!;
};

describe('history table', () => {
  it('named <stack>-history, key run_id (S) + key (S), on-demand, TTL on expires_at, PITR, SSE with the AWS managed key, deletion protection, retained', () => {
    const table = retainedTable(withWorkflows, historyTable(withWorkflows).table);
    expect(table.Properties).toEqual({
      TableName: resourceNames('kaj').history,
      KeySchema: [
        { AttributeName: HISTORY_TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
        { AttributeName: HISTORY_TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'run_id', AttributeType: 'S' },
        { AttributeName: 'key', AttributeType: 'S' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      TimeToLiveSpecification: { AttributeName: HISTORY_TABLE_SCHEMA.ttlAttribute, Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
      DeletionProtectionEnabled: true,
    });
    expect(HISTORY_TABLE_SCHEMA).toEqual({ partitionKey: 'run_id', sortKey: 'key', ttlAttribute: 'expires_at' });
    expect(table.Properties.TableName).toBe('kaj-history');
  });

  it("keeps the task table's deletion protection and removal policy (retainData)", () => {
    const s = withWorkflows;
    const tasks = s.resources[s.logicalId(s.stack.taskTable.table)]!;
    const history = s.resources[s.logicalId(historyTable(s).table)]!;
    expect(history.DeletionPolicy).toBe(tasks.DeletionPolicy);
    expect(history.UpdateReplacePolicy).toBe(tasks.UpdateReplacePolicy);
    expect(history.Properties.DeletionProtectionEnabled).toBe(tasks.Properties.DeletionProtectionEnabled);
    expectRetainedUnlessTold(HistoryTable, 'history');
  });

  it('the consumers of every lane: Query, PutItem and GetItem on the table (no index), one statement; nothing else', () => {
    const s = withWorkflows;
    const id = s.logicalId(historyTable(s).table);
    expect(consumers(s)).toHaveLength(1 + Object.keys(s.stack.laneConsumers).length);
    expect(Object.keys(s.stack.laneConsumers).length).toBeGreaterThan(0);
    for (const c of consumers(s)) {
      const statements = roleStatements(s, c.handler).filter((st) => JSON.stringify(st.Resource).includes(id));
      expect(statements.map(normalized), c.node.path).toEqual([
        normalized({
          Sid: 'HistoryTableItems',
          Effect: 'Allow',
          Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query'],
          Resource: getAtt(id),
        }),
      ]);
    }
    expect([...HISTORY_TABLE_APPEND_ACTIONS].sort()).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
    ]);
  });

  it('the API function: the same three (a run’s steps, signals, the ends of children a cancel stops); the sweeper and the scheduler: nothing', () => {
    const s = withWorkflows;
    const id = s.logicalId(historyTable(s).table);
    const onTable = (fn: IConstruct) => roleStatements(s, fn).filter((st) => JSON.stringify(st.Resource).includes(id));
    expect(onTable(s.stack.api.handler).map(normalized)).toEqual([
      {
        Sid: 'HistoryTableItems',
        Effect: 'Allow',
        Action: [...HISTORY_TABLE_APPEND_ACTIONS].sort(),
        Resource: getAtt(id),
      },
    ]);
    for (const fn of [s.stack.sweeper.handler, s.stack.scheduler.handler]) expect(onTable(fn)).toEqual([]);
  });

  it('KAJ_HISTORY_TABLE_NAME for the consumers and the API only', () => {
    const s = withWorkflows;
    const ref = { Ref: s.logicalId(historyTable(s).table) };
    for (const c of consumers(s)) expect(envOf(s, c.handler)[ENV.historyTableName], c.node.path).toEqual(ref);
    expect(envOf(s, s.stack.api.handler)[ENV.historyTableName]).toEqual(ref);
    for (const fn of [s.stack.sweeper.handler, s.stack.scheduler.handler]) {
      expect(envOf(s, fn)).not.toHaveProperty(ENV.historyTableName);
    }
    expect(ENV.historyTableName).toBe('KAJ_HISTORY_TABLE_NAME');
    // Counted in the largest environment a function can get (Lambda's 4 KB).
    expect(largestEnvironmentBytes('kaj', [])).toBeGreaterThan(
      JSON.stringify({ [ENV.historyTableName]: resourceNames('kaj').history }).length,
    );
  });

  it('output HistoryTableName, which the CLI reads when present (stacks without workflows have none)', () => {
    const outputs = (withWorkflows.template.toJSON() as { Outputs: Record<string, { Value: unknown }> }).Outputs;
    expect(OUTPUT_KEYS.historyTableName).toBe('HistoryTableName');
    expect(outputs.HistoryTableName?.Value).toEqual({
      Ref: withWorkflows.logicalId(historyTable(withWorkflows).table),
    });
    const others = Object.keys(outputs)
      .filter((k) => k !== 'HistoryTableName')
      .map((k) => ({ OutputKey: k, OutputValue: `v-${k}` }));
    expect(parseStackOutputs(others)).not.toHaveProperty('historyTableName');
    expect(
      parseStackOutputs([...others, { OutputKey: 'HistoryTableName', OutputValue: 'kaj-history' }]).historyTableName,
    ).toBe('kaj-history');
    const plain = (without.template.toJSON() as { Outputs: Record<string, unknown> }).Outputs;
    expect(plain).not.toHaveProperty('HistoryTableName');
  });

  it('cdk-nag AwsSolutions: no unacknowledged finding with the history table', () => {
    const { found, success } = nagFindings(withWorkflows.stack);
    expect(found).toEqual([]);
    expect(success).toBe(true);
  });
});

describe('cfn-lint', () => {
  itPassesCfnLint('the template with the history table passes cfn-lint', () => [['workflows', withWorkflows]]);
});

describe('a stack without workflows', () => {
  it('has no history table, no HistoryTableName output, no KAJ_HISTORY_TABLE_NAME and no permission on one', () => {
    expect(without.stack.historyTable).toBeUndefined();
    const tables = ofType(without, 'AWS::DynamoDB::Table').map(([, t]) => t.Properties.TableName);
    expect(tables).not.toContain(resourceNames('kaj').history);
    expect(JSON.stringify(without.template.toJSON())).not.toContain('History');
    expect(JSON.stringify(without.template.toJSON())).not.toContain(ENV.historyTableName);
  });

  it('is the stack with workflows less the table and what names it: every other resource the same', () => {
    const table = withWorkflows.logicalId(historyTable(withWorkflows).table);
    const added = Object.keys(withWorkflows.resources).filter((id) => !(id in without.resources));
    expect(added).toEqual([table]);
    expect(Object.keys(without.resources).filter((id) => !(id in withWorkflows.resources))).toEqual([]);
    for (const [id, resource] of Object.entries(without.resources)) {
      expect(lessHistory(withWorkflows.resources[id]!), id).toEqual(lessHistory(resource));
    }
  });
});

/** A resource without what the history table adds to it: its variable, its statements, and the code's asset hash. */
function lessHistory(resource: CfnResourceJson): CfnResourceJson {
  const r = structuredClone(resource) as CfnResourceJson & { Metadata?: unknown };
  delete r.Metadata;
  if (r.Type === 'AWS::Lambda::Function') {
    delete r.Properties.Code;
    const vars = r.Properties.Environment?.Variables as Record<string, unknown> | undefined;
    if (vars !== undefined) delete vars[ENV.historyTableName];
  }
  if (r.Type === 'AWS::IAM::Policy') {
    const doc = r.Properties.PolicyDocument as { Statement: Statement[] };
    doc.Statement = doc.Statement.filter((st) => !String(st.Sid).startsWith('HistoryTable'));
  }
  return r;
}
