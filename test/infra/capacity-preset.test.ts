/**
 * The `capacity` preset (docs/capacity.md): what it resolves to, that settings the user gives
 * win over it, and what the synthesized template then holds — the API stage's throttling and
 * each event source mapping's maximum concurrency and batching window.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAPACITY_PRESETS, DEFAULT_CONFIG, parseConfig, resolveConfig } from '../../infra/config.js';
import { InvalidConfigError } from '../../infra/errors.js';
import { PRIORITIES, type Priority } from '../../shared/config/resources.js';
import { type CfnResourceJson, type SynthesizedKaj, synthKaj } from './synth.js';

const SYNTH_TIMEOUT = 180_000;
const PRESET = CAPACITY_PRESETS['10m-per-day'];

describe('Preset: 10m-per-day', () => {
  it('sets the API throttling and the per-priority concurrency of the reference workload', () => {
    const c = parseConfig({ capacity: '10m-per-day' });
    expect(c.capacity).toBe('10m-per-day');
    expect(c.throttling).toEqual({ rateLimit: 1_000, burstLimit: 2_000 });
    expect(c.concurrency).toEqual({ high: 60, normal: 300, low: 30 });
    expect(c.maxBatchingWindowSeconds).toEqual({ high: 0, normal: 1, low: 1 });
    // Everything else stays at its default.
    const changed = {
      capacity: undefined,
      throttling: undefined,
      concurrency: undefined,
      maxBatchingWindowSeconds: undefined,
    };
    expect({ ...c, ...changed }).toEqual({ ...DEFAULT_CONFIG, ...changed });
  });

  it('carries the peak and drains a 5-minute backlog in 3 / 10 / 15 minutes (Little’s law)', () => {
    // 5 s ± 20 % tasks: a batch of 10 lasts as long as its slowest task, ≈ 5.82 s (+ 50 ms overhead).
    const batchSeconds = 4 + 2 * (10 / 11) + 0.05;
    const peak: Record<Priority, number> = { high: 35, normal: 280, low: 35 };
    const drainTarget: Record<Priority, number> = { high: 180, normal: 600, low: 900 };
    for (const p of PRIORITIES) {
      const served = (PRESET.concurrency[p] * 10) / batchSeconds;
      const backlog = 105_000 * (peak[p] / 350);
      expect(backlog / (served - peak[p]), p).toBeLessThan(drainTarget[p]);
      expect(backlog / (served - peak[p]), p).toBeGreaterThan(0);
    }
    expect(PRESET.throttling.rateLimit).toBeGreaterThanOrEqual(2 * 350);
  });

  it("fits Lambda's and API Gateway's default account quotas (1,000 concurrent executions, 10,000 requests/s)", () => {
    const total = PRIORITIES.reduce((s, p) => s + PRESET.concurrency[p], 0);
    expect(total).toBeLessThanOrEqual(800);
    expect(PRESET.throttling.rateLimit).toBeLessThanOrEqual(10_000);
    expect(PRESET.throttling.burstLimit).toBeLessThanOrEqual(5_000);
  });
});

describe('Explicit settings win over the preset', () => {
  it('per-priority keys merge one by one', () => {
    const c = parseConfig({ capacity: '10m-per-day', concurrency: { low: 10 } });
    expect(c.concurrency).toEqual({ high: 60, normal: 300, low: 10 });
  });

  it('a number sets every priority', () => {
    expect(parseConfig({ capacity: '10m-per-day', concurrency: 100 }).concurrency).toEqual({
      high: 100,
      normal: 100,
      low: 100,
    });
  });

  it('throttling merges key by key', () => {
    expect(parseConfig({ capacity: '10m-per-day', throttling: { rateLimit: 500 } }).throttling).toEqual({
      rateLimit: 500,
      burstLimit: 2_000,
    });
  });

  it('whatever the layer: a key set in cdk.json beats a preset chosen later on the command line', () => {
    const c = parseConfig({ concurrency: { high: 7 } }, { capacity: '10m-per-day' });
    expect(c.concurrency).toEqual({ high: 7, normal: 300, low: 30 });
  });

  it('works from the context: -c kaj:capacity=10m-per-day', () => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'kaj-capacity-test-'));
    try {
      const app = new App({ context: { 'kaj:capacity': '10m-per-day' }, outdir });
      expect(resolveConfig(app.node).concurrency).toEqual(PRESET.concurrency);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('an unknown preset fails naming the key and the presets there are', () => {
    expect(() => parseConfig({ capacity: '1b-per-day' })).toThrow(InvalidConfigError);
    expect(() => parseConfig({ capacity: '1b-per-day' })).toThrow(/"capacity".*10m-per-day.*1b-per-day/);
  });

  it('an explicit setting out of range still fails, naming its key', () => {
    expect(() => parseConfig({ capacity: '10m-per-day', concurrency: { normal: 1001 } })).toThrow(
      /"concurrency\.normal"/,
    );
  });
});

describe('Synthesized with capacity: 10m-per-day', () => {
  let preset: SynthesizedKaj;
  let overridden: SynthesizedKaj;

  beforeAll(() => {
    preset = synthKaj({ capacity: '10m-per-day' });
    overridden = synthKaj(
      { capacity: '10m-per-day', concurrency: { high: 80 }, throttling: { burstLimit: 1_500 } },
      // Same function code as the first stack: skip its esbuild bundling.
      { 'aws:cdk:bundling-stacks': [] },
    );
  }, SYNTH_TIMEOUT);

  afterAll(() => {
    preset?.dispose();
    overridden?.dispose();
  });

  const stageOf = (s: SynthesizedKaj): CfnResourceJson =>
    s.resources[s.logicalId(s.stack.api.stage)] as CfnResourceJson;
  const mappingOf = (s: SynthesizedKaj, p: Priority): CfnResourceJson =>
    s.resources[s.logicalId(s.stack.consumer.mappings[p])] as CfnResourceJson;

  it('the $default stage throttles at the preset rate and burst', () => {
    const stage = stageOf(preset);
    expect(stage.Type).toBe('AWS::ApiGatewayV2::Stage');
    expect(stage.Properties.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 1_000, ThrottlingBurstLimit: 2_000 });
  });

  it("each priority queue's mapping has the preset's MaximumConcurrency and batching window", () => {
    for (const p of PRIORITIES) {
      const mapping = mappingOf(preset, p);
      expect(mapping.Type).toBe('AWS::Lambda::EventSourceMapping');
      expect(mapping.Properties.EventSourceArn).toEqual({
        'Fn::GetAtt': [preset.logicalId(preset.stack.taskQueues.queues[p]), 'Arn'],
      });
      expect(mapping.Properties.ScalingConfig).toEqual({ MaximumConcurrency: PRESET.concurrency[p] });
      expect(mapping.Properties.BatchSize).toBe(10);
    }
    // High invokes at once; normal and low wait up to a second to fill their batches.
    expect(mappingOf(preset, 'high').Properties.MaximumBatchingWindowInSeconds).toBeUndefined();
    expect(mappingOf(preset, 'normal').Properties.MaximumBatchingWindowInSeconds).toBe(1);
    expect(mappingOf(preset, 'low').Properties.MaximumBatchingWindowInSeconds).toBe(1);
  });

  it('settings given with the preset reach the template over it', () => {
    expect(stageOf(overridden).Properties.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: 1_000,
      ThrottlingBurstLimit: 1_500,
    });
    expect(mappingOf(overridden, 'high').Properties.ScalingConfig).toEqual({ MaximumConcurrency: 80 });
    expect(mappingOf(overridden, 'normal').Properties.ScalingConfig).toEqual({ MaximumConcurrency: 300 });
    expect(mappingOf(overridden, 'low').Properties.ScalingConfig).toEqual({ MaximumConcurrency: 30 });
  });

  it('the queues still outlast the consumer (the preset changes no timeout)', () => {
    const consumer = preset.resources[preset.logicalId(preset.stack.consumer.handler)] as CfnResourceJson;
    for (const p of PRIORITIES) {
      const q = preset.resources[preset.logicalId(preset.stack.taskQueues.queues[p])] as CfnResourceJson;
      expect(q.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(consumer.Properties.Timeout);
    }
  });
});
