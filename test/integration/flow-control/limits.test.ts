/**
 * The cases of `limits.cases.ts` on the embedded emulators; `limits.moto.test.ts` runs them
 * on moto (and an endpoint given), so two test workers share the suite.
 */
import { describeHalf } from '../../support/targets.js';
import { limitCases } from './limits.cases.js';

describeHalf('embedded', 'flow control across worker processes on $name', limitCases);
