import { describe, expect, it } from 'vitest';
import { Command, InvalidArgumentError } from 'commander';
import { addFilterOptions, filterOf } from '../../../cli/commands/dlq/selection.js';
import { explain, UsageError } from '../../../cli/errors.js';
import { parseDuration, parseRate, parseTaskId } from '../../../cli/parse.js';
import { checkTargetFlags } from '../../../cli/target.js';

describe('CLI argument parsing', () => {
  it('durations', () => {
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    for (const bad of ['', '3', '3x', 'h', '-1h', '0m', '1h 2m'])
      expect(() => parseDuration(bad)).toThrow(InvalidArgumentError);
  });
  it('rates', () => {
    expect(parseRate('10')).toBe(10);
    expect(parseRate('10/s')).toBe(10);
    expect(parseRate('300/m')).toBe(5);
    for (const bad of ['0', 'fast', '-1/s', '5/h']) expect(() => parseRate(bad)).toThrow(InvalidArgumentError);
  });
  it('task ids: Kaj-made and hand-made ids pass; empty, spaced, control characters and oversized ones do not', () => {
    for (const ok of ['t_5c0f00112233445566778899aabbccdd', 't_nope', 't_moved_by_sqs', 't_a-b'])
      expect(parseTaskId(ok)).toBe(ok);
    for (const bad of ['', ' ', 't_', 'x', ' t_a', 't_a ', 't_a/b', 't_a\u0000', `t_${'a'.repeat(255)}`]) {
      expect(() => parseTaskId(bad), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
  });
  it('--task <id...> still collects several ids, each checked', () => {
    const parse = (...args: string[]) => {
      const cmd = addFilterOptions(new Command('x').exitOverride().configureOutput({ writeErr: () => {} }), {
        task: true,
        limitHelp: '',
      });
      cmd.parse(args, { from: 'user' });
      return filterOf(cmd.opts(), 0).taskIds;
    };
    expect(parse('--task', 't_a', 't_b', '--task', 't_c')).toEqual(['t_a', 't_b', 't_c']);
    expect(() => parse('--task', 't_a', '')).toThrow(/a task id cannot be empty/);
  });
  it('targets: exactly one, and the AWS flags only with --stack', () => {
    expect(() => checkTargetFlags({})).toThrow(/no target/);
    expect(() => checkTargetFlags({ local: true, stack: 'x' })).toThrow(UsageError);
    expect(() => checkTargetFlags({ local: true, region: 'eu-west-1' })).toThrow(/go with --stack/);
    expect(() => checkTargetFlags({ endpointUrl: 'http://localhost:4566' })).toThrow(/needs --stack/);
    expect(() => checkTargetFlags({ stack: 'kaj', endpointUrl: 'localhost' })).toThrow(/http/);
    expect(() => checkTargetFlags({ stack: 'kaj-prod', region: 'eu-west-1', profile: 'ops' })).not.toThrow();
    expect(() => checkTargetFlags({ local: true })).not.toThrow();
  });
  it('explains AWS errors by their cause, without a stack trace', () => {
    const creds = Object.assign(new Error('Could not load credentials from any providers'), {
      name: 'CredentialsProviderError',
    });
    expect(explain(new Error('wrapped', { cause: creds }))).toMatchObject({
      exitCode: 1,
      message: expect.stringMatching(/no usable AWS credentials/),
    });
    expect(explain(new Error('Region is missing')).message).toMatch(/--region/);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4566'), { code: 'ECONNREFUSED' });
    expect(explain(refused).message).toMatch(/cannot reach/);
    expect(explain(new UsageError('bad'))).toEqual({ message: 'bad', exitCode: 2 });
  });
});
