import { createHash } from 'node:crypto';
import * as z from 'zod';
import { defineTask, PermanentError } from '../shared/task/define.js';

const SUPPORTED = /\.(jpe?g|png|webp)$/i;

/**
 * Plans the thumbnails of an image: one object key per requested size. (The resize itself
 * is simulated; a real handler would stream from S3 through sharp and write each key.)
 */
export const makeThumbnails = defineTask({
  type: 'make_thumbnails',
  description: 'Render thumbnails of an image at the given sizes',
  schema: z.strictObject({
    image_url: z.url(),
    sizes: z.array(z.number().int().min(16).max(2048)).min(1).max(10),
  }),
  timeoutSeconds: 120,
  // CPU-bound: runs on the cpu lane's bigger consumer (tasks/lanes.ts).
  lane: 'cpu',
  handler: async (payload, ctx) => {
    const path = new URL(payload.image_url).pathname;
    if (!SUPPORTED.test(path))
      throw new PermanentError(`unsupported image format: ${path}`, { code: 'UNSUPPORTED_FORMAT' });
    const digest = createHash('sha256').update(payload.image_url).digest('hex').slice(0, 16);
    const thumbnails = [...new Set(payload.sizes)]
      .sort((a, b) => a - b)
      .map((size) => {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        return { size, key: `thumbnails/${digest}/${size}.webp` };
      });
    return { thumbnails };
  },
});
