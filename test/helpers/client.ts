// Options that bind the generated client to a test server and key, checking every answer against the contract.
import type { RequestOpts } from '@oazapfts/runtime';
import { contractCheckingFetch } from './contract-check.ts';

export function clientOptions(serviceUrl: string, key?: string, headers: Record<string, string> = {}): RequestOpts {
  return {
    baseUrl: `${serviceUrl}/api/v1/catalog`,
    headers: key === undefined ? headers : { ...headers, authorization: `Bearer ${key}` },
    fetch: contractCheckingFetch(),
  };
}

/** Asserts the status of a generated-client answer and narrows its data to that status's shape. */
export function expectStatus<A extends { status: number; data: unknown }, S extends A['status']>(answer: A, status: S): Extract<A, { status: S }>['data'] {
  if (answer.status !== status) {
    throw new Error(`expected HTTP ${status}, got ${answer.status}: ${JSON.stringify(answer.data).slice(0, 1000)}`);
  }
  return answer.data as Extract<A, { status: S }>['data'];
}

/** Like expectStatus, for a success: returns what is inside the `{ success: true, data }` envelope. */
export function expectData<A extends { status: number; data: unknown }, S extends A['status']>(
  answer: A,
  status: S,
): Extract<A, { status: S }>['data'] extends { data: infer D } ? D : never {
  const body = expectStatus(answer, status) as { success?: unknown; data?: unknown };
  if (body.success !== true) throw new Error(`expected a success envelope: ${JSON.stringify(body).slice(0, 500)}`);
  return body.data as never;
}
