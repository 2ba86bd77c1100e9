/**
 * The task API's routes: the one table the HTTP router (`shared/service/api/http.ts`) matches requests
 * against and the CDK construct (`infra/constructs/api.ts`) creates API Gateway routes from.
 *
 * Paths are API Gateway route templates: literal segments and `{name}` parameters, one segment each.
 *
 * @module
 */

export type RouteMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface ApiRoute {
  /** What the route does; the router dispatches on it. */
  readonly name: string;
  readonly method: RouteMethod;
  /** API Gateway route template, e.g. `/api/v1/tasks/{id}`. */
  readonly path: string;
}

/** Every route of the task API (payload format 2.0). */
export const API_ROUTES = [
  { name: 'submit', method: 'POST', path: '/api/v1/tasks' },
  { name: 'list', method: 'GET', path: '/api/v1/tasks' },
  // Before `/api/v1/tasks/{id}`: the first path that matches decides (as API Gateway prefers a literal segment).
  { name: 'submit_batch', method: 'POST', path: '/api/v1/tasks/batch' },
  { name: 'get', method: 'GET', path: '/api/v1/tasks/{id}' },
  { name: 'cancel', method: 'DELETE', path: '/api/v1/tasks/{id}' },
  { name: 'signal', method: 'POST', path: '/api/v1/tasks/{id}/signals/{name}' },
  { name: 'schedule_list', method: 'GET', path: '/api/v1/schedules' },
  { name: 'schedule_put', method: 'PUT', path: '/api/v1/schedules/{name}' },
  { name: 'schedule_get', method: 'GET', path: '/api/v1/schedules/{name}' },
  { name: 'schedule_delete', method: 'DELETE', path: '/api/v1/schedules/{name}' },
  { name: 'schedule_pause', method: 'POST', path: '/api/v1/schedules/{name}/pause' },
  { name: 'schedule_resume', method: 'POST', path: '/api/v1/schedules/{name}/resume' },
  { name: 'schedule_trigger', method: 'POST', path: '/api/v1/schedules/{name}/trigger' },
  { name: 'schedule_backfill', method: 'POST', path: '/api/v1/schedules/{name}/backfill' },
  { name: 'pipeline_list', method: 'GET', path: '/api/v1/pipelines' },
  { name: 'pipeline_get', method: 'GET', path: '/api/v1/pipelines/{name}' },
  { name: 'pipeline_runs', method: 'GET', path: '/api/v1/pipelines/{name}/runs' },
  { name: 'pipeline_trigger', method: 'POST', path: '/api/v1/pipelines/{name}/runs' },
  { name: 'pipeline_backfill', method: 'POST', path: '/api/v1/pipelines/{name}/backfill' },
  { name: 'pipeline_run', method: 'GET', path: '/api/v1/pipelines/{name}/runs/{logical_date}' },
  { name: 'pipeline_run_cancel', method: 'DELETE', path: '/api/v1/pipelines/{name}/runs/{logical_date}' },
  { name: 'pipeline_run_clear', method: 'POST', path: '/api/v1/pipelines/{name}/runs/{logical_date}/clear' },
  { name: 'openapi', method: 'GET', path: '/api/v1/openapi.json' },
] as const satisfies readonly ApiRoute[];

export type TaskApiRoute = (typeof API_ROUTES)[number];

/** What a request path and method matched. */
export type RouteMatch<R extends ApiRoute = TaskApiRoute> =
  /** A route: its parameters as they appear in the path (still percent-encoded). */
  | { readonly kind: 'route'; readonly route: R; readonly params: Readonly<Record<string, string>> }
  /** The path is a route's but the method is not: `allow` lists the path's methods (`GET, DELETE`). */
  | { readonly kind: 'method_not_allowed'; readonly allow: string; readonly params: Readonly<Record<string, string>> }
  | { readonly kind: 'not_found' };

interface PathPattern<R extends ApiRoute> {
  readonly regex: RegExp;
  readonly paramNames: readonly string[];
  /** The routes of this path, in table order. */
  readonly routes: readonly R[];
}

const PARAM = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/**
 * The regular expression of a route template. Like API Gateway with a stage in the URL, any
 * leading segments (`/prod/api/v1/tasks`) are accepted, and so is one trailing slash.
 */
export function templateRegex(template: string): { regex: RegExp; paramNames: string[] } {
  if (!template.startsWith('/')) throw new Error(`route template "${template}" must start with "/"`);
  const paramNames: string[] = [];
  const segments = template
    .slice(1)
    .split('/')
    .map((segment) => {
      if (segment === '') throw new Error(`route template "${template}" has an empty segment`);
      const param = PARAM.exec(segment);
      if (param) {
        paramNames.push(param[1] as string);
        return '\\/([^/]+)';
      }
      if (/[{}]/.test(segment)) throw new Error(`route template "${template}": bad segment "${segment}"`);
      return `\\/${segment.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`;
    });
  return { regex: new RegExp(`^(?:\\/[^/]+)*?${segments.join('')}\\/?$`), paramNames };
}

/**
 * A matcher over a route table: paths are tried in the order they first appear in the table,
 * and the first path that matches decides (its methods, or 405).
 */
export function routeMatcher<R extends ApiRoute>(
  routes: readonly R[],
): (method: string, path: string) => RouteMatch<R> {
  const patterns: PathPattern<R>[] = [];
  for (const template of [...new Set(routes.map((r) => r.path))]) {
    const mine = routes.filter((r) => r.path === template);
    for (const [i, r] of mine.entries()) {
      if (mine.findIndex((o) => o.method === r.method) !== i)
        throw new Error(`route ${r.method} ${r.path} is listed twice`);
    }
    patterns.push({ ...templateRegex(template), routes: mine });
  }
  return (method, path) => {
    const m = method.toUpperCase();
    for (const p of patterns) {
      const found = p.regex.exec(path);
      if (!found) continue;
      const params: Record<string, string> = {};
      for (const [i, name] of p.paramNames.entries()) params[name] = found[i + 1] ?? '';
      const route = p.routes.find((r) => r.method === m);
      return route === undefined
        ? { kind: 'method_not_allowed', allow: p.routes.map((r) => r.method).join(', '), params }
        : { kind: 'route', route, params };
    }
    return { kind: 'not_found' };
  };
}

/** Matches a request against {@link API_ROUTES}. */
export const matchRoute: (method: string, path: string) => RouteMatch = routeMatcher(API_ROUTES);

/** The API Gateway route key of a route: `POST /api/v1/tasks`. */
export function routeKey(r: Pick<ApiRoute, 'method' | 'path'>): string {
  return `${r.method} ${r.path}`;
}
