/**
 * The cases of `limits.cases.ts` on moto (and an endpoint given); `limits.test.ts` runs them
 * on the embedded emulators, so two test workers share the suite.
 */
import { describeHalf } from '../../support/targets.js';
import { limitCases } from './limits.cases.js';

describeHalf('others', 'flow control across worker processes on $name', limitCases);
