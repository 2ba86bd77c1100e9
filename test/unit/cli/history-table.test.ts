/** The CLI's name of a target's history table (`historyTableOf`): the one the target names, else `<prefix>-history`. */
import { describe, expect, it } from 'vitest';
import { CliError } from '../../../cli/errors.js';
import { historyTableOf } from '../../../cli/services.js';
import { ALL_OUTPUT_KEYS, OUTPUT_KEYS, parseStackOutputs } from '../../../infra/outputs.js';

describe('Function: historyTableOf', () => {
  const t = (resources: { tableName: string; historyTableName?: string }) => ({
    label: 'stack x',
    resources: resources as never,
  });

  it('is the table the target names (a stack’s HistoryTableName output, the state file of npm start)', () => {
    expect(historyTableOf(t({ tableName: 'kaj-prod-tasks', historyTableName: 'custom-history' }))).toBe(
      'custom-history',
    );
  });

  it('else <prefix>-history next to <prefix>-tasks; a task table not so named is an error', () => {
    expect(historyTableOf(t({ tableName: 'kaj-prod-tasks' }))).toBe('kaj-prod-history');
    expect(() => historyTableOf(t({ tableName: 'legacy' }))).toThrow(CliError);
  });

  it('a stack’s outputs carry it only when the stack has one', () => {
    const required = ALL_OUTPUT_KEYS.map((k) => ({ OutputKey: k, OutputValue: `v-${k}` }));
    expect(parseStackOutputs(required)).not.toHaveProperty('historyTableName');
    const withHistory = [...required, { OutputKey: OUTPUT_KEYS.historyTableName, OutputValue: 'kaj-history' }];
    expect(parseStackOutputs(withHistory).historyTableName).toBe('kaj-history');
  });
});
