/**
 * The cases of `workflow-chaos.cases.ts` on the embedded emulators; `workflow-chaos.moto.test.ts` runs them
 * on moto (and an endpoint given), so two test workers share the suite.
 */
import { describeHalf } from '../../support/targets.js';
import { workflowChaosCases } from './workflow-chaos.cases.js';

describeHalf('embedded', 'workflow chaos on $name', workflowChaosCases);
