/**
 * Configuration parsing and validation. Invalid settings must fail synth with a message that
 * names the key; none of these tests bundles a function (validation runs before any construct).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, parseConfig, readContextConfig, resolveConfig } from '../../infra/config.js';
import { InvalidConfigError } from '../../infra/errors.js';
import { KajStack } from '../../infra/kaj-stack.js';
import { OUTPUT_KEYS, parseStackOutputs } from '../../infra/outputs.js';
import { DEFAULTS, PRIORITIES } from '../../shared/config/resources.js';
import { cdkJsonContext } from './synth.js';

// One output folder for every App of this file (an App without one makes a temporary folder each).
let outdir: string;
beforeAll(() => {
  outdir = mkdtempSync(path.join(tmpdir(), 'kaj-config-test-'));
});
afterAll(() => rmSync(outdir, { recursive: true, force: true }));
const newApp = (context: Record<string, unknown> = {}) => new App({ context, outdir });

const stackWith =
  (config: Record<string, unknown>, context: Record<string, unknown> = {}) =>
  () =>
    new KajStack(newApp(context), 'KajConfigTest', { config: config as never });

describe('defaults', () => {
  it('an empty configuration is the documented defaults, from shared DEFAULTS', () => {
    const c = parseConfig({});
    expect(c).toEqual(DEFAULT_CONFIG);
    expect(c.concurrency).toEqual(DEFAULTS.concurrency);
    expect(c.consumerTimeoutSeconds).toBe(DEFAULTS.consumerTimeoutSeconds);
    expect(c.queueVisibilityTimeoutSeconds).toBe(DEFAULTS.queueVisibilityTimeoutSeconds);
    expect(c.authMode).toBe('iam');
    expect(c.deletionProtection).toBe(true);
    expect(c.retainData).toBe(true);
    expect(c.encryptAlarmTopic).toBe(false);
    expect(c.api).toBe('http');
    expect(c.scheduleMinIntervalSeconds).toBe(DEFAULTS.scheduleMinIntervalSeconds);
    expect(c.scheduleAllowSecondsField).toBe(DEFAULTS.scheduleAllowSecondsField);
    expect(c.scheduleMaxPerOwner).toBe(DEFAULTS.scheduleMaxPerOwner);
  });

  it('api: "rest" from kaj:config or from -c kaj:api=rest', () => {
    expect(resolveConfig(newApp({ 'kaj:config': { api: 'rest' } }).node).api).toBe('rest');
    expect(resolveConfig(newApp({ 'kaj:api': 'rest' }).node).api).toBe('rest');
    expect(resolveConfig(newApp({ 'kaj:config': { api: 'rest' }, 'kaj:api': 'http' }).node).api).toBe('http');
  });

  it('cdk.json ships a valid configuration', () => {
    expect(() => resolveConfig(newApp(cdkJsonContext()).node)).not.toThrow();
  });
});

describe('invalid configuration fails with the key named', () => {
  it.each([
    [{ concurrency: { low: 1 } }, /"concurrency\.low".*>=2/],
    [{ concurrency: 1 }, /"concurrency\.high"/],
    [{ concurrency: { high: 1001 } }, /"concurrency\.high"/],
    [{ queueVisibilityTimeoutSeconds: 299 }, /"queueVisibilityTimeoutSeconds".*consumerTimeoutSeconds/],
    [
      { consumerTimeoutSeconds: 600 },
      /"queueVisibilityTimeoutSeconds" \(330\) must be >= consumerTimeoutSeconds \(600\)/,
    ],
    [{ consumerTimeoutSeconds: 120 }, /"consumerTimeoutSeconds".*>=300/],
    [{ consumerTimeoutSeconds: 901, queueVisibilityTimeoutSeconds: 1000 }, /"consumerTimeoutSeconds".*<=900/],
    [{ alarmEmail: 'not-an-email' }, /"alarmEmail".*email/i],
    [{ authMode: 'cognito' }, /"authMode".*"iam"\|"none".*cognito/],
    [{ authMode: 'IAM ' }, /"authMode"/],
    [{ api: 'soap' }, /"api".*"http"\|"rest".*soap/],
    [{ api: 'REST' }, /"api"/],
    [{ batchSize: { normal: 20 } }, /"maxBatchingWindowSeconds\.normal".*batchSize\.normal/],
    [{ batchSize: 0 }, /"batchSize\.high"/],
    [{ maxBatchingWindowSeconds: 301 }, /"maxBatchingWindowSeconds\.high"/],
    [{ logLevel: 'verbose' }, /"logLevel"/],
    [{ logRetentionDays: 10 }, /"logRetentionDays".*must be one of/],
    [{ leaseSeconds: 1 }, /"leaseSeconds"/],
    [{ leaseSeconds: 600, queueVisibilityTimeoutSeconds: 500 }, /"leaseSeconds" \(600\) must not exceed/],
    [{ leaseSeconds: 600, queueVisibilityTimeoutSeconds: 900 }, /"leaseSeconds" is refused by the function runtime/],
    [{ retentionDays: 0 }, /"retentionDays"/],
    [{ stackName: '1kaj' }, /"stackName"/],
    [{ stackName: 'kaj_prod' }, /"stackName"/],
    [{ throttling: { rateLimit: 0 } }, /"throttling\.rateLimit"/],
    [{ deletionProtection: 'yes' }, /"deletionProtection"/],
    [{ encryptAlarmTopic: 'kms' }, /"encryptAlarmTopic".*boolean/],
    [{ concurency: { high: 3 } }, /"concurency" is not a Kaj setting/],
    [{ throttling: { burst: 3 } }, /"throttling\.burst" is not a Kaj setting/],
    [{ scheduleMinIntervalSeconds: 0 }, /"scheduleMinIntervalSeconds".*>=1/],
    [{ scheduleMinIntervalSeconds: 86_401 }, /"scheduleMinIntervalSeconds".*<=86400/],
    [{ scheduleMinIntervalSeconds: 1.5 }, /"scheduleMinIntervalSeconds"/],
    [{ scheduleAllowSecondsField: 'yes' }, /"scheduleAllowSecondsField".*boolean/],
    [{ scheduleMaxPerOwner: 0 }, /"scheduleMaxPerOwner".*>=1/],
    [{ scheduleMaxPerOwner: 1_000_001 }, /"scheduleMaxPerOwner".*<=1000000/],
  ])('%j', (config, message) => {
    expect(stackWith(config)).toThrow(InvalidConfigError);
    expect(stackWith(config)).toThrow(message);
  });

  it('reports every invalid key at once', () => {
    expect(() => parseConfig({ concurrency: { low: 1 }, alarmEmail: 'x' })).toThrow(
      /"concurrency\.low".*; "alarmEmail"/,
    );
  });

  it('keeps the outbox index keys-only unless an earlier stack needs ALL; anything else names the key', () => {
    expect(parseConfig({}).outboxIndexProjection).toBe('KEYS_ONLY');
    expect(parseConfig({ outboxIndexProjection: 'ALL' }).outboxIndexProjection).toBe('ALL');
    expect(() => parseConfig({ outboxIndexProjection: 'INCLUDE' })).toThrow(/"outboxIndexProjection"/);
  });

  it('exposes the key on the error', () => {
    try {
      parseConfig({ concurrency: { normal: 0 } });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidConfigError);
      expect((e as InvalidConfigError).key).toBe('concurrency.normal');
    }
  });
});

describe('sources', () => {
  it('reads kaj:config from context, as an object or a JSON string', () => {
    const app = newApp({ 'kaj:config': { concurrency: { high: 30 }, authMode: 'none' } });
    expect(resolveConfig(app.node)).toMatchObject({ concurrency: { high: 30, normal: 5, low: 2 }, authMode: 'none' });
    const app2 = newApp({ 'kaj:config': '{"retentionDays": 30}' });
    expect(resolveConfig(app2.node).retentionDays).toBe(30);
  });

  it('single -c kaj:<key>=<value> overrides are parsed as JSON when they are JSON', () => {
    const app = newApp({
      'kaj:config': { concurrency: { high: 30 }, deletionProtection: true },
      'kaj:deletionProtection': 'false',
      'kaj:alarmEmail': 'ops@example.com',
      'kaj:concurrency': '{"low": 4}',
      'kaj:batchSize': '5',
      'kaj:encryptAlarmTopic': 'true',
      'kaj:scheduleMinIntervalSeconds': '30',
      'kaj:scheduleAllowSecondsField': 'true',
      'kaj:scheduleMaxPerOwner': '50',
    });
    const c = resolveConfig(app.node);
    expect(c).toMatchObject({
      scheduleMinIntervalSeconds: 30,
      scheduleAllowSecondsField: true,
      scheduleMaxPerOwner: 50,
    });
    expect(c.deletionProtection).toBe(false);
    expect(c.alarmEmail).toBe('ops@example.com');
    expect(c.concurrency).toEqual({ high: 30, normal: 5, low: 4 });
    expect(c.batchSize).toEqual({ high: 5, normal: 5, low: 5 });
    expect(c.encryptAlarmTopic).toBe(true);
  });

  it('a misspelt kaj:<key> context key fails instead of being ignored', () => {
    const app = newApp({ 'kaj:alarmEmial': 'ops@example.com' });
    expect(() => readContextConfig(app.node)).toThrow(/"kaj:alarmEmial" is not a Kaj setting/);
  });

  it('a kaj:config that is not an object fails', () => {
    expect(() => resolveConfig(newApp({ 'kaj:config': '[1]' }).node)).toThrow(/"kaj:config"/);
  });

  it('stack props override the context key by key', () => {
    const app = newApp({ 'kaj:config': { concurrency: { high: 30, low: 3 } } });
    expect(resolveConfig(app.node, { concurrency: { low: 4 } }).concurrency).toEqual({ high: 30, normal: 5, low: 4 });
  });

  it('the stack name comes from the configuration and prefixes every resource', () => {
    // 'aws:cdk:bundling-stacks': [] skips esbuild: nothing here needs the function code.
    const app = newApp({ 'kaj:config': { stackName: 'kaj-prod' }, 'aws:cdk:bundling-stacks': [] });
    const stack = new KajStack(app, 'Any', {
      config: { dashboard: false },
    });
    expect(stack.stackName).toBe('kaj-prod');
    expect(stack.names.table).toBe('kaj-prod-tasks');
    for (const p of PRIORITIES) expect(stack.names.queues[p]).toBe(`kaj-prod-${p}`);
  });
});

describe('stack outputs', () => {
  const outputs = [
    { OutputKey: OUTPUT_KEYS.apiUrl, OutputValue: 'https://abc.execute-api.us-east-1.amazonaws.com/' },
    { OutputKey: OUTPUT_KEYS.tableName, OutputValue: 'kaj-tasks' },
    ...PRIORITIES.flatMap((p) => [
      { OutputKey: OUTPUT_KEYS.queueUrl[p], OutputValue: `https://sqs/q-${p}` },
      { OutputKey: OUTPUT_KEYS.queueArn[p], OutputValue: `arn:q-${p}` },
      { OutputKey: OUTPUT_KEYS.dlqUrl[p], OutputValue: `https://sqs/d-${p}` },
      { OutputKey: OUTPUT_KEYS.dlqArn[p], OutputValue: `arn:d-${p}` },
    ]),
  ];

  it('parses DescribeStacks outputs', () => {
    const o = parseStackOutputs(outputs);
    expect(o.tableName).toBe('kaj-tasks');
    expect(o.queueUrls.low).toBe('https://sqs/q-low');
    expect(o.deadLetterQueueArns.high).toBe('arn:d-high');
  });

  it('reads the alarm topic ARN, and still reads a stack deployed before that output existed', () => {
    const arn = 'arn:aws:sns:us-east-1:123456789012:kaj-alarms';
    expect(
      parseStackOutputs([...outputs, { OutputKey: OUTPUT_KEYS.alarmTopicArn, OutputValue: arn }]).alarmTopicArn,
    ).toBe(arn);
    expect(parseStackOutputs(outputs).alarmTopicArn).toBeUndefined();
  });

  it('names the missing keys', () => {
    expect(() => parseStackOutputs(outputs.slice(1), 'kaj')).toThrow(/kaj has no output\(s\) ApiUrl/);
  });
});
