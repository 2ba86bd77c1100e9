/**
 * The cases of `sdk-faults.cases.ts` on moto (and an endpoint given); `sdk-faults.test.ts` runs them
 * on the embedded emulators, so two test workers share the suite.
 */
import { describeHalf } from '../../support/targets.js';
import { sdkFaultCases } from './sdk-faults.cases.js';

describeHalf('others', 'SDK faults at each call site on $name', sdkFaultCases);
