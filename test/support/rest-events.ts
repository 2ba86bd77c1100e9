/**
 * API Gateway REST API (payload format 1.0) proxy events, shaped as AWS documents them
 * ("Input format of a Lambda function for proxy integration"): `resource` is the route template,
 * `path` the request path without the stage, headers both single- and multi-valued, `null` where
 * a REST API sends nothing, and the caller in `requestContext.identity` (`userArn` set only under
 * AWS_IAM authorization).
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { matchRoute } from '../../shared/service/api/routes.js';

export interface RestEventOptions {
  readonly body?: string;
  readonly headers?: Record<string, string>;
  /** Query parameters; an array is a repeated parameter (`?status=a&status=b`). */
  readonly query?: Record<string, string | string[]>;
  /** The verified IAM caller (AWS_IAM authorization). @default none: an unauthenticated request */
  readonly userArn?: string;
  readonly isBase64Encoded?: boolean;
  /** @default 'prod' */
  readonly stage?: string;
}

/** A REST API event for `method path`, its `resource` and path parameters taken from the route table. */
export function restApiEvent(method: string, path: string, o: RestEventOptions = {}): APIGatewayProxyEvent {
  const match = matchRoute(method, path);
  const resource = match.kind === 'route' ? match.route.path : path;
  const params = match.kind === 'not_found' ? {} : match.params;
  const headers = {
    'Content-Type': 'application/json',
    Host: 'abc123.execute-api.eu-west-1.amazonaws.com',
    ...o.headers,
  };
  const query = o.query ?? {};
  const multiQuery = Object.fromEntries(Object.entries(query).map(([k, v]) => [k, Array.isArray(v) ? v : [v]]));
  const singleQuery = Object.fromEntries(Object.entries(multiQuery).map(([k, v]) => [k, v.at(-1) as string]));
  const stage = o.stage ?? 'prod';
  const hasQuery = Object.keys(query).length > 0;
  return {
    resource,
    path,
    httpMethod: method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: hasQuery ? singleQuery : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: Object.keys(params).length > 0 ? { ...params } : null,
    stageVariables: null,
    requestContext: {
      accountId: '111122223333',
      apiId: 'abc123',
      authorizer: null,
      domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
      domainPrefix: 'abc123',
      extendedRequestId: 'ext-1',
      httpMethod: method,
      identity: {
        accessKey: o.userArn === undefined ? null : 'ASIAEXAMPLE',
        accountId: o.userArn === undefined ? null : '111122223333',
        apiKey: null,
        apiKeyId: null,
        caller: o.userArn === undefined ? null : 'AROAEXAMPLE:session',
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: '198.51.100.7',
        user: o.userArn === undefined ? null : 'AROAEXAMPLE:session',
        userAgent: 'rest-test',
        userArn: o.userArn ?? null,
      },
      path: `/${stage}${path}`,
      protocol: 'HTTP/1.1',
      requestId: 'req-1',
      requestTime: '02/Dec/2026:14:00:00 +0000',
      requestTimeEpoch: 1_796_220_000_000,
      resourceId: 'res-1',
      resourcePath: resource,
      stage,
    },
    body: o.body ?? null,
    isBase64Encoded: o.isBase64Encoded ?? false,
  };
}
