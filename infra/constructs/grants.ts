import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';

/**
 * Adds one statement, `sid`, to the policy of `role`: `actions` on `resourceArns`, nothing more.
 * The Kaj functions' roles are written statement by statement, each named, rather than with CDK's
 * `grant*()` methods: those write no Sid and add actions and index ARNs a function does not use.
 */
export function allow(role: iam.IRole, sid: string, actions: readonly string[], resourceArns: readonly string[]): void {
  role.addToPrincipalPolicy(new iam.PolicyStatement({ sid, actions: [...actions], resources: [...resourceArns] }));
}

/** `actions` on `queues`, as one statement `sid` (the queues in the order given). */
export function grantQueues(
  role: iam.IRole,
  sid: string,
  actions: readonly string[],
  queues: readonly sqs.IQueue[],
): void {
  allow(
    role,
    sid,
    actions,
    queues.map((q) => q.queueArn),
  );
}
