/** Where a running `npm start` describes itself (endpoints, resources) for the admin CLI's `--local`. */
export const LOCAL_STATE_FILE = '.kaj/local.json';
