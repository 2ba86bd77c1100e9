/**
 * The one adapter between API Gateway's two Lambda proxy payload formats: a REST API's (format
 * 1.0, `APIGatewayProxyEvent`) and an HTTP API's (format 2.0, `APIGatewayProxyEventV2`, what the
 * handler in `http.ts` reads). A REST request is turned into the 2.0 event the handler already
 * serves, and its reply into the 1.0 result shape, so both API kinds run the same handler code.
 *
 * The caller: a 2.0 event carries the IAM identity API Gateway verified in
 * `requestContext.authorizer.iam.userArn`, a 1.0 event in `requestContext.identity.userArn`
 * (filled only under AWS_IAM authorization, never from the request). The adapter moves the one
 * into the other, so `ownerOf` derives the same owner for the same principal either way.
 *
 * @module
 */
import type {
  APIGatewayEventRequestContextV2,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyEventV2WithRequestContext,
  APIGatewayProxyResult,
} from 'aws-lambda';
import { UnsupportedApiEventError } from './errors.js';
import type { HttpResult } from './http.js';

/** What API Gateway invokes the API function with: a REST API's event or an HTTP API's. */
export type ApiGatewayEvent = APIGatewayProxyEventV2 | APIGatewayProxyEvent;

/** A 2.0 request context with the IAM authorizer's identity, as an HTTP API with AWS_IAM sends it. */
type RequestContextWithIam = APIGatewayEventRequestContextV2 & {
  authorizer?: { iam: { accountId: string | null; userArn: string; userId: string | null; accessKey: string | null } };
};

/** Payload format 2.0: an HTTP API's event (`version: '2.0'`). */
export function isHttpApiEvent(event: ApiGatewayEvent): event is APIGatewayProxyEventV2 {
  return (event as { version?: unknown }).version === '2.0';
}

/** Payload format 1.0: a REST API's proxy event (no `version`, an `httpMethod`). */
export function isRestApiEvent(event: ApiGatewayEvent): event is APIGatewayProxyEvent {
  const e = event as { version?: unknown; httpMethod?: unknown; path?: unknown };
  return (
    (e.version === undefined || e.version === '1.0') && typeof e.httpMethod === 'string' && typeof e.path === 'string'
  );
}

/** Values of a multi-value map as format 2.0 gives them: repeated values joined with commas. */
function joined(
  multi: Readonly<Record<string, readonly string[] | undefined>> | null | undefined,
  single: Readonly<Record<string, string | undefined>> | null | undefined,
  lowerCaseKeys: boolean,
): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  const key = (k: string) => (lowerCaseKeys ? k.toLowerCase() : k);
  for (const [k, v] of Object.entries(single ?? {})) if (v !== undefined) out[key(k)] = v;
  for (const [k, v] of Object.entries(multi ?? {})) if (v !== undefined && v.length > 0) out[key(k)] = v.join(',');
  return Object.keys(out).length === 0 ? undefined : out;
}

function rawQueryString(event: APIGatewayProxyEvent): string {
  const pairs: string[] = [];
  const multi = event.multiValueQueryStringParameters ?? {};
  const single = event.queryStringParameters ?? {};
  const names = new Set([...Object.keys(single), ...Object.keys(multi)]);
  for (const name of names) {
    const values = multi[name] ?? (single[name] === undefined ? [] : [single[name] as string]);
    for (const v of values) pairs.push(`${encodeURIComponent(name)}=${encodeURIComponent(v)}`);
  }
  return pairs.join('&');
}

/**
 * A REST API request as the 2.0 event the handler serves: method, path, headers (lower-cased, as
 * 2.0 has them), query parameters (repeated ones joined with commas, as 2.0 joins them), path
 * parameters, body, and the caller's IAM identity.
 */
export function fromRestApiEvent(event: APIGatewayProxyEvent): APIGatewayProxyEventV2 {
  const rc = event.requestContext;
  const identity = rc.identity;
  const userArn = typeof identity?.userArn === 'string' && identity.userArn !== '' ? identity.userArn : undefined;
  const headers = joined(event.multiValueHeaders, event.headers, true) ?? {};
  const query = joined(event.multiValueQueryStringParameters, event.queryStringParameters, false);
  const pathParameters = event.pathParameters ?? undefined;
  const requestContext: RequestContextWithIam = {
    accountId: rc.accountId,
    apiId: rc.apiId,
    domainName: rc.domainName ?? headers.host ?? '',
    domainPrefix: rc.domainPrefix ?? '',
    http: {
      method: event.httpMethod,
      path: event.path,
      protocol: rc.protocol,
      sourceIp: identity?.sourceIp ?? '',
      userAgent: identity?.userAgent ?? headers['user-agent'] ?? '',
    },
    requestId: rc.requestId,
    routeKey: `${event.httpMethod} ${event.resource}`,
    stage: rc.stage,
    time: rc.requestTime ?? '',
    timeEpoch: rc.requestTimeEpoch,
    ...(userArn === undefined
      ? {}
      : {
          authorizer: {
            iam: {
              accountId: identity.accountId,
              userArn,
              userId: identity.user,
              accessKey: identity.accessKey,
            },
          },
        }),
  };
  const v2: APIGatewayProxyEventV2WithRequestContext<RequestContextWithIam> = {
    version: '2.0',
    routeKey: requestContext.routeKey,
    rawPath: event.path,
    rawQueryString: rawQueryString(event),
    headers,
    ...(query === undefined ? {} : { queryStringParameters: query }),
    ...(pathParameters === undefined ? {} : { pathParameters }),
    ...(event.stageVariables == null ? {} : { stageVariables: event.stageVariables }),
    requestContext,
    ...(event.body === null ? {} : { body: event.body }),
    isBase64Encoded: event.isBase64Encoded,
  };
  return v2;
}

/** The handler's reply in the 1.0 result shape a REST API's Lambda proxy integration requires. */
export function toRestApiResult(result: HttpResult): APIGatewayProxyResult {
  return {
    statusCode: result.statusCode,
    headers: result.headers,
    body: result.body,
    isBase64Encoded: result.isBase64Encoded ?? false,
  };
}

/**
 * Serves both payload formats with one handler of 2.0 events: a 2.0 event goes straight to it, a
 * 1.0 event through {@link fromRestApiEvent} and back through {@link toRestApiResult}.
 * @throws UnsupportedApiEventError for anything else (the function was invoked with something
 * that is not an API Gateway proxy event).
 */
export function servingBothFormats(
  handle: (event: APIGatewayProxyEventV2) => Promise<HttpResult>,
): (event: ApiGatewayEvent) => Promise<HttpResult | APIGatewayProxyResult> {
  return async (event) => {
    if (isHttpApiEvent(event)) return handle(event);
    if (isRestApiEvent(event)) return toRestApiResult(await handle(fromRestApiEvent(event)));
    const version = (event as { version?: unknown } | null)?.version;
    throw new UnsupportedApiEventError(
      `not an API Gateway proxy event (payload format 2.0 with version "2.0", or a REST API's 1.0 with httpMethod and path); got version ${JSON.stringify(version)}`,
    );
  };
}
