/**
 * moto for the integration suites, started through `local/moto_server.py`: moto's own server,
 * but running one request at a time, so that a conditional UpdateItem is atomic and a GetItem
 * never sees half of one (see that file for why `python3 -m moto.server` is not enough).
 *
 * @module
 */
import { MOTO_LAUNCHER, type RunningMoto, startMoto as startMotoWith } from '../../local/emulators.js';

export { MOTO_LAUNCHER, motoAvailable, type RunningMoto } from '../../local/emulators.js';

/** Starts moto on `127.0.0.1` through the serializing launcher. */
export function startMoto(opts: { port?: number } = {}): Promise<RunningMoto> {
  return startMotoWith({ ...opts, launcher: MOTO_LAUNCHER });
}
