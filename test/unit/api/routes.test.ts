import { describe, expect, it } from 'vitest';
import { API_ROUTES, matchRoute, routeKey, routeMatcher, templateRegex } from '../../../shared/service/api/routes.js';

describe('API_ROUTES', () => {
  it('is the task API (submit, list, batch, read, cancel, signal), the schedule API, the pipeline API and the OpenAPI document', () => {
    expect(API_ROUTES.map(routeKey)).toEqual([
      'POST /api/v1/tasks',
      'GET /api/v1/tasks',
      'POST /api/v1/tasks/batch',
      'GET /api/v1/tasks/{id}',
      'DELETE /api/v1/tasks/{id}',
      'POST /api/v1/tasks/{id}/signals/{name}',
      'GET /api/v1/schedules',
      'PUT /api/v1/schedules/{name}',
      'GET /api/v1/schedules/{name}',
      'DELETE /api/v1/schedules/{name}',
      'POST /api/v1/schedules/{name}/pause',
      'POST /api/v1/schedules/{name}/resume',
      'POST /api/v1/schedules/{name}/trigger',
      'POST /api/v1/schedules/{name}/backfill',
      'GET /api/v1/pipelines',
      'GET /api/v1/pipelines/{name}',
      'GET /api/v1/pipelines/{name}/runs',
      'POST /api/v1/pipelines/{name}/runs',
      'POST /api/v1/pipelines/{name}/backfill',
      'GET /api/v1/pipelines/{name}/runs/{logical_date}',
      'DELETE /api/v1/pipelines/{name}/runs/{logical_date}',
      'POST /api/v1/pipelines/{name}/runs/{logical_date}/clear',
      'GET /api/v1/openapi.json',
    ]);
  });

  it('matches schedule paths, actions before the bare name, and answers 405 with the allowed methods', () => {
    expect(matchRoute('POST', '/api/v1/schedules/nightly/pause')).toMatchObject({
      kind: 'route',
      route: { name: 'schedule_pause' },
      params: { name: 'nightly' },
    });
    expect(matchRoute('PUT', '/api/v1/schedules/nightly')).toMatchObject({ route: { name: 'schedule_put' } });
    expect(matchRoute('POST', '/api/v1/schedules/nightly')).toEqual({
      kind: 'method_not_allowed',
      allow: 'PUT, GET, DELETE',
      params: { name: 'nightly' },
    });
    expect(matchRoute('GET', '/api/v1/schedules')).toMatchObject({ route: { name: 'schedule_list' } });
  });

  it('has unique names and unique method + path pairs', () => {
    expect(new Set(API_ROUTES.map((r) => r.name)).size).toBe(API_ROUTES.length);
    expect(new Set(API_ROUTES.map(routeKey)).size).toBe(API_ROUTES.length);
  });
});

describe('templateRegex', () => {
  it('is the regex the router always used', () => {
    expect(templateRegex('/api/v1/tasks').regex.source).toBe(/^(?:\/[^/]+)*?\/api\/v1\/tasks\/?$/.source);
    expect(templateRegex('/api/v1/tasks/{id}')).toEqual({
      regex: /^(?:\/[^/]+)*?\/api\/v1\/tasks\/([^/]+)\/?$/,
      paramNames: ['id'],
    });
  });

  it('escapes literal segments', () => {
    const { regex } = templateRegex('/a.b/c+d');
    expect(regex.test('/a.b/c+d')).toBe(true);
    expect(regex.test('/aXb/ccd')).toBe(false);
  });

  it.each(['api/v1', '/api//v1', '/api/{}', '/api/x{id}', '/api/{1d}'])('refuses the template %j', (t) => {
    expect(() => templateRegex(t)).toThrow(/route template/);
  });
});

describe('matchRoute', () => {
  it.each([
    ['POST', '/api/v1/tasks', 'submit', {}],
    ['POST', '/api/v1/tasks/', 'submit', {}],
    ['post', '/api/v1/tasks', 'submit', {}],
    ['POST', '/prod/api/v1/tasks', 'submit', {}],
    ['POST', '/a/b/api/v1/tasks', 'submit', {}],
    ['GET', '/api/v1/tasks/t_1', 'get', { id: 't_1' }],
    ['GET', '/api/v1/tasks/t_1/', 'get', { id: 't_1' }],
    ['GET', '/prod/api/v1/tasks/t%5F1', 'get', { id: 't%5F1' }],
    ['DELETE', '/api/v1/tasks/t_1', 'cancel', { id: 't_1' }],
    ['GET', '/api/v1/tasks', 'list', {}],
    ['GET', '/prod/api/v1/tasks/', 'list', {}],
    // The collection is tried first: a stage named like the API still reaches it.
    ['POST', '/api/v1/tasks/api/v1/tasks', 'submit', {}],
    ['GET', '/api/v1/tasks/tasks', 'get', { id: 'tasks' }],
  ])('%s %s → %s %j', (method, path, name, params) => {
    const m = matchRoute(method, path);
    expect(m.kind).toBe('route');
    if (m.kind !== 'route') return;
    expect(m.route.name).toBe(name);
    expect(m.params).toEqual(params);
  });

  it.each([
    ['PUT', '/api/v1/tasks', 'POST, GET', {}],
    ['DELETE', '/api/v1/tasks', 'POST, GET', {}],
    ['POST', '/api/v1/tasks/t_1', 'GET, DELETE', { id: 't_1' }],
    ['PATCH', '/api/v1/tasks/%ff', 'GET, DELETE', { id: '%ff' }],
  ])('%s %s → 405, allow %s', (method, path, allow, params) => {
    expect(matchRoute(method, path)).toEqual({ kind: 'method_not_allowed', allow, params });
  });

  it.each([
    ['GET', '/api/v2/tasks'],
    ['GET', '/api/v1/tasks/a/b'],
    ['GET', '/api/v1/tasks//'],
    ['POST', '//api/v1/tasks'],
    ['POST', '/api/v1/taskss'],
    ['POST', ''],
    ['GET', '/'],
  ])('%s %j → no route', (method, path) => {
    expect(matchRoute(method, path)).toEqual({ kind: 'not_found' });
  });
});

describe('routeMatcher', () => {
  it('refuses a method listed twice for one path', () => {
    expect(() =>
      routeMatcher([
        { name: 'a', method: 'GET', path: '/x' },
        { name: 'b', method: 'GET', path: '/x' },
      ]),
    ).toThrow(/GET \/x is listed twice/);
  });

  it('lists the methods of the path in table order in `allow`', () => {
    const match = routeMatcher([
      { name: 'del', method: 'DELETE', path: '/x/{id}' },
      { name: 'get', method: 'GET', path: '/x/{id}' },
    ]);
    expect(match('POST', '/x/1')).toEqual({ kind: 'method_not_allowed', allow: 'DELETE, GET', params: { id: '1' } });
  });
});
