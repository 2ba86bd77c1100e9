/**
 * Minimal typings for dynalite 4 (an in-process DynamoDB emulator on LevelDB),
 * covering what Kaj uses. The package ships no types.
 */
declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    /** LevelDB directory; in-memory when omitted. */
    path?: string;
    /** Time tables stay in CREATING state (default 500). */
    createTableMs?: number;
    /** Time tables stay in DELETING state (default 500). */
    deleteTableMs?: number;
    /** Time tables stay in UPDATING state (default 500). */
    updateTableMs?: number;
    /** Maximum item size in KiB (default 400). */
    maxItemSizeKb?: number;
    verbose?: boolean;
    debug?: boolean;
    ssl?: boolean;
  }

  /** Creates (does not start) the HTTP server; `close()` also closes the store. */
  function dynalite(options?: DynaliteOptions): Server;
  export = dynalite;
}
