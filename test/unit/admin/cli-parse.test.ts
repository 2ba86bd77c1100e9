import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from 'commander';
import { explain, UsageError } from '../../../cli/errors.js';
import { parseDuration, parseRate } from '../../../cli/parse.js';
import { checkTargetFlags } from '../../../cli/target.js';

describe('CLI argument parsing', () => {
  it('durations', () => {
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    for (const bad of ['', '3', '3x', 'h', '-1h', '0m', '1h 2m']) expect(() => parseDuration(bad)).toThrow(InvalidArgumentError);
  });
  it('rates', () => {
    expect(parseRate('10')).toBe(10);
    expect(parseRate('10/s')).toBe(10);
    expect(parseRate('300/m')).toBe(5);
    for (const bad of ['0', 'fast', '-1/s', '5/h']) expect(() => parseRate(bad)).toThrow(InvalidArgumentError);
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
    const creds = Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' });
    expect(explain(new Error('wrapped', { cause: creds }))).toMatchObject({ exitCode: 1, message: expect.stringMatching(/no usable AWS credentials/) });
    expect(explain(new Error('Region is missing')).message).toMatch(/--region/);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4566'), { code: 'ECONNREFUSED' });
    expect(explain(refused).message).toMatch(/cannot reach/);
    expect(explain(new UsageError('bad'))).toEqual({ message: 'bad', exitCode: 2 });
  });
});
