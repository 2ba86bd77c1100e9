/**
 * The cases of `workflow-chaos.cases.ts` on moto (and an endpoint given); `workflow-chaos.test.ts` runs them
 * on the embedded emulators, so two test workers share the suite.
 */
import { describeHalf } from '../../support/targets.js';
import { workflowChaosCases } from './workflow-chaos.cases.js';

describeHalf('others', 'workflow chaos on $name', workflowChaosCases);
