import { describe, expect, it } from 'vitest';
import { DeadLetterQueueUnavailableError, MoveTaskFailedError } from '../../../cli/admin/errors.js';
import { CliError, EXIT, UsageError } from '../../../cli/errors.js';
import {
  ActionRefusedError,
  BadParameterError,
  ConsoleError,
  ForeignHostError,
  PageNotFoundError,
} from '../../../console/errors.js';
import { InvalidConfigError } from '../../../infra/errors.js';
import { IndexRebuildError } from '../../../local/dynalite-indexes.js';
import { HttpError } from '../../../shared/service/api/errors.js';
import { ConfigError, MissingEnvironmentError } from '../../../shared/config/errors.js';
import { UnprocessableMessageError } from '../../../shared/service/consumer/errors.js';
import { KajError } from '../../../shared/errors.js';
import { QueueUnavailableError } from '../../../shared/task/queue-errors.js';
import { PermanentError, RetryableError, TaskTimeoutError } from '../../../shared/retry/errors.js';
import { ConditionFailedError, StoreRejectedError, StoreUnavailableError } from '../../../shared/task/store-errors.js';
import { LeaseLostError, TaskNotFoundError, ValidationError } from '../../../shared/task/errors.js';

describe('Class: KajError (one root for every module)', () => {
  const cause = new Error('underneath');
  it.each([
    ['TaskNotFoundError', new TaskNotFoundError('t_1'), 't_1'],
    ['LeaseLostError', new LeaseLostError('t_2', 3, cause), 't_2'],
    ['ValidationError', new ValidationError('payload.n', 'bad', { taskId: 't_3', cause }), 't_3'],
    ['StoreUnavailableError', new StoreUnavailableError('down', { taskId: 't_4', cause }), 't_4'],
    ['StoreRejectedError', new StoreRejectedError('no', { taskId: 't_5', cause }), 't_5'],
    ['ConditionFailedError', new ConditionFailedError('t_6', undefined, cause), 't_6'],
    ['QueueUnavailableError', new QueueUnavailableError('down', { taskId: 't_7', cause }), 't_7'],
    ['TaskTimeoutError', new TaskTimeoutError('t_8', 60), 't_8'],
    ['ConfigError', new ConfigError('leaseSeconds', 'bad', { cause }), undefined],
    ['MissingEnvironmentError', new MissingEnvironmentError('KAJ_TABLE_NAME'), undefined],
    ['UnprocessableMessageError', new UnprocessableMessageError('not json', 'm-1', cause), undefined],
    ['HttpError', new HttpError(400, 'invalid_json', 'bad', { cause }), undefined],
    ['PermanentError', new PermanentError('no', { cause }), undefined],
    ['RetryableError', new RetryableError('later', { cause }), undefined],
    ['BadParameterError', new BadParameterError('state', 'bad'), undefined],
    ['ActionRefusedError', new ActionRefusedError('no token'), undefined],
    ['ForeignHostError', new ForeignHostError('evil.example'), undefined],
    ['PageNotFoundError', new PageNotFoundError('no such task'), undefined],
    ['UsageError', new UsageError('give --stack'), undefined],
    ['CliError', new CliError('failed', EXIT.failure, { cause }), undefined],
    ['DeadLetterQueueUnavailableError', new DeadLetterQueueUnavailableError('down', { cause }), undefined],
    ['MoveTaskFailedError', new MoveTaskFailedError('FAILED', { cause }), undefined],
    ['IndexRebuildError', new IndexRebuildError('unreadable', { cause }), undefined],
    ['InvalidConfigError', new InvalidConfigError('stackName', []), undefined],
  ])('%s is a KajError named after its class, with the task id and cause it was given', (name, err, taskId) => {
    expect(err).toBeInstanceOf(KajError);
    expect(err.name).toBe(name);
    expect(err.taskId).toBe(taskId);
    if (err.cause !== undefined) expect(err.cause).toBe(cause);
  });

  it('keeps the retryable flag explicit where the caller must decide', () => {
    expect(new StoreUnavailableError('x').retryable).toBe(true);
    expect(new StoreRejectedError('x').retryable).toBe(false);
    expect(new QueueUnavailableError('x').retryable).toBe(true);
    expect(new PermanentError('x').retryable).toBe(false);
    expect(new RetryableError('x').retryable).toBe(true);
    expect(new DeadLetterQueueUnavailableError('x').retryable).toBe(true);
    for (const err of [
      new ConsoleError('x'),
      new BadParameterError('f', 'x'),
      new UsageError('x'),
      new IndexRebuildError('x'),
      new InvalidConfigError('stackName', []),
    ]) {
      expect(err.retryable).toBe(false);
    }
  });

  it('keeps what the console and the CLI read from their errors: the field, the message, the exit code', () => {
    const bad = new BadParameterError('state', 'must be one of queued, running');
    expect(bad.field).toBe('state');
    expect(bad.message).toBe('state: must be one of queued, running');
    expect(new UsageError('x').exitCode).toBe(EXIT.usage);
    expect(new CliError('x').exitCode).toBe(EXIT.failure);
    expect(new CliError('x', EXIT.interrupted).exitCode).toBe(EXIT.interrupted);
  });
});
