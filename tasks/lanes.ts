import { defineLanes } from '../shared/task/define.js';

/**
 * This deployment's lanes: task types that name a lane (`defineTask({ lane })`) get its queues
 * and its own consumer function, sized apart from the default lane. Read by the CDK stack and by
 * `npm start` alike. Adding a lane is a line here; a type moves to it with `lane: '<name>'`.
 * See docs/flow-control.md, "Declaring lanes and limits".
 */
export const lanes = defineLanes({
  // Image work is CPU-bound: a bigger function (more vCPU) with few copies at once.
  cpu: { memoryMiB: 2048, timeoutSeconds: 330, concurrency: { high: 4, normal: 4, low: 2 } },
});
