/**
 * The cases of `sdk-faults.cases.ts` on the embedded emulators; `sdk-faults.moto.test.ts` runs them
 * on moto (and an endpoint given), so two test workers share the suite.
 */
import { describeHalf } from '../../support/targets.js';
import { sdkFaultCases } from './sdk-faults.cases.js';

describeHalf('embedded', 'SDK faults at each call site on $name', sdkFaultCases);
