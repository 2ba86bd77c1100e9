/**
 * The cases of `faults.cases.ts` on the embedded emulators; `faults.moto.test.ts` runs them
 * on moto (and an endpoint given), so two test workers share the suite.
 */
import { describeHalf } from '../../support/targets.js';
import { flowFaultCases } from './faults.cases.js';

describeHalf('embedded', 'flow control across worker processes on $name', flowFaultCases);
