import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';

export interface IdSecretProps {
  /** Name of the secret: `<stack>-id-secret`. */
  readonly secretName: string;
  /**
   * What happens to the secret when the stack is deleted. Follow the task table: a retained table
   * holds task ids derived under this secret.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** Length of the generated secret: 64 letters and digits ≈ 381 bits. */
export const ID_SECRET_LENGTH = 64;

/**
 * The per-deployment key of the HMAC that derives task ids from idempotency keys
 * (shared/task/submit.ts `idempotentTaskId`, docs/security.md).
 *
 * Secrets Manager generates the value when the stack is created: it is never in the template or
 * the cloud assembly. The API function receives it as a `{{resolve:secretsmanager:…}}` dynamic
 * reference in its environment (see `TaskApi`), which CloudFormation resolves at deploy time, so
 * the function's role needs no permission on the secret (the deploying role needs
 * `secretsmanager:GetSecretValue`, which the CDK bootstrap's execution role has).
 *
 * Not rotated: a new value gives every idempotency key a new task id.
 */
export class IdSecret extends Construct {
  public readonly secret: secretsmanager.Secret;

  constructor(scope: Construct, id: string, props: IdSecretProps) {
    super(scope, id);
    this.secret = new secretsmanager.Secret(this, 'Secret', {
      secretName: props.secretName,
      description:
        'Kaj: key of the HMAC that derives task ids from idempotency keys (KAJ_ID_SECRET of the API function). ' +
        'Do not rotate: see docs/security.md.',
      generateSecretString: {
        passwordLength: ID_SECRET_LENGTH,
        // Letters and digits only: nothing to escape anywhere the value travels.
        excludePunctuation: true,
        includeSpace: false,
      },
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    Validations.of(this.secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'rotating the key would give every idempotency key a new task id and break idempotency for keys in flight; ' +
        'see docs/security.md',
    });
  }
}
