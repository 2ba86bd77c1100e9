import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type { Construct } from 'constructs';
import type { KajFunction } from './kaj-function.js';

/**
 * The EventBridge rule `Schedule` of a construct, running its function on a schedule: a missed run
 * is covered by the next one, so none is retried (no retry; an event older than a minute is dropped).
 */
export function scheduleRule(
  scope: Construct,
  handler: KajFunction,
  description: string,
  schedule: events.Schedule,
): events.Rule {
  return new events.Rule(scope, 'Schedule', {
    description,
    schedule,
    targets: [new targets.LambdaFunction(handler, { retryAttempts: 0, maxEventAge: Duration.minutes(1) })],
  });
}
