/**
 * AWS list prices the cost benchmark (`bench/cost.ts`) turns counts into dollars with.
 *
 * One file, one date: every figure is us-east-1, on-demand, public list price, read on
 * {@link PRICES_AS_OF}, past any free tier and at the lowest volume tier (Kaj's scale). Each
 * entry names the page it comes from. Re-read them there before trusting a total; change the
 * date when you do.
 *
 * Billing rules the benchmark applies (units, rounding) are beside the price they belong to.
 */

export const PRICES_AS_OF = '2026-12-01';
export const PRICES_REGION = 'us-east-1';

export interface Price {
  /** USD per `per` units of `unit`. */
  readonly usd: number;
  readonly per: number;
  readonly unit: string;
  /** Where the price and its rule are published. */
  readonly source: string;
  readonly note?: string;
}

/** Bytes in a billed GB (AWS bills data in binary gigabytes, 2^30 bytes). */
export const BYTES_PER_GB = 1024 ** 3;

export const PRICES = {
  dynamodb: {
    /**
     * On-demand write request unit: one standard write of up to 1 KB (larger items take one unit
     * per started KB). Halved from $1.25 on 2024-11-01.
     */
    writeRequestUnit: {
      usd: 0.625,
      per: 1_000_000,
      unit: 'WRU',
      source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
      note: 'Standard table class; after the November 2024 on-demand price cut (was $1.25)',
    },
    /** On-demand read request unit: one strongly consistent read of up to 4 KB, or two eventually consistent ones. */
    readRequestUnit: {
      usd: 0.125,
      per: 1_000_000,
      unit: 'RRU',
      source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
      note: 'Standard table class; after the November 2024 on-demand price cut (was $0.25)',
    },
    /** Table and index storage: item size + 100 bytes of overhead per item (and per index entry). */
    storage: {
      usd: 0.25,
      per: 1,
      unit: 'GB-month',
      source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
      note: 'First 25 GB-month per account and Region free; item + 100 B overhead (CapacityUnitCalculations.html)',
    },
  },
  sqs: {
    /**
     * Standard queue API request (send, receive, delete, change visibility; batch calls count once).
     * Each 64 KB chunk of a request's payload is billed as one request ({@link SQS_BILLING_CHUNK_BYTES}).
     */
    request: {
      usd: 0.4,
      per: 1_000_000,
      unit: 'request',
      source: 'https://aws.amazon.com/sqs/pricing/',
      note: 'First 1 M requests per month free; $0.40/M up to 100 billion; each 64 KB payload chunk = 1 request',
    },
  },
  apiGateway: {
    /** HTTP API request, metered in 512 KB increments ({@link HTTP_API_METERING_BYTES}). */
    httpApiRequest: {
      usd: 1.0,
      per: 1_000_000,
      unit: 'request',
      source: 'https://aws.amazon.com/api-gateway/pricing/',
      note: 'First 300 million requests per month ($0.90/M beyond); 512 KB increments; free tier 12 months only',
    },
  },
  lambda: {
    /** Duration on arm64 (Graviton), billed per ms of wall-clock time × configured memory. */
    arm64GbSecond: {
      usd: 0.0000133334,
      per: 1,
      unit: 'GB-s',
      source: 'https://aws.amazon.com/lambda/pricing/',
      note: 'arm64, first 7.5 billion GB-s per month; 1 ms granularity; memory in GB = MiB / 1024',
    },
    request: {
      usd: 0.2,
      per: 1_000_000,
      unit: 'invocation',
      source: 'https://aws.amazon.com/lambda/pricing/',
      note: 'Event source mapping invocations count as requests like any other',
    },
  },
  cloudwatch: {
    /**
     * Log ingestion. Lambda's logs are "vended logs" since May 2025, tiered from $0.50/GB for the
     * first 10 TB per month (the standard-class rate); EMF metric lines are log bytes too.
     */
    logIngestion: {
      usd: 0.5,
      per: 1,
      unit: 'GB ingested',
      source: 'https://aws.amazon.com/cloudwatch/pricing/',
      note: 'Standard log class / Lambda vended logs first 10 TB; storage ($0.03/GB-month) not counted',
    },
    /**
     * Custom metrics (what EMF lines create): priced per metric (name × dimension values) per
     * month, not per data point, so they are a fixed cost per deployment, not per task.
     */
    customMetric: {
      usd: 0.3,
      per: 1,
      unit: 'metric-month',
      source: 'https://aws.amazon.com/cloudwatch/pricing/',
      note: 'First 10,000 metrics; a fixed monthly cost (per task type × metric), not counted per task',
    },
  },
  /** Not used by Kaj: the comparison its workflows are priced against. */
  stepFunctions: {
    standardTransition: {
      usd: 25,
      per: 1_000_000,
      unit: 'state transition (Standard workflows)',
      source: 'https://aws.amazon.com/step-functions/pricing/',
      note: 'After the free tier of 4,000 a month; Express workflows are priced by requests and duration instead',
    },
  },
} as const satisfies Record<string, Record<string, Price>>;

/** SQS bills each 64 KB (65,536 bytes) chunk of a request's payload as one request. */
export const SQS_BILLING_CHUNK_BYTES = 64 * 1024;
/** HTTP APIs meter requests in 512 KB increments (Kaj's bodies are ≤ 64 KiB: always one). */
export const HTTP_API_METERING_BYTES = 512 * 1024;

/** Dollars for `quantity` units of `price`. */
export function cost(price: Price, quantity: number): number {
  return (price.usd * quantity) / price.per;
}
