/**
 * The cases of `faults.cases.ts` on moto (and an endpoint given); `faults.test.ts` runs them
 * on the embedded emulators, so two test workers share the suite.
 */
import { describeHalf } from '../../support/targets.js';
import { flowFaultCases } from './faults.cases.js';

describeHalf('others', 'flow control across worker processes on $name', flowFaultCases);
