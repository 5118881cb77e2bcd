// Judging and reporting the contract fuzz test's answers: what is wrong with one answer, and all failures grouped by kind.
import { API_PREFIX } from '../../platform/http/contract.ts';
import { assertMatchesContract } from './contract-check.ts';
import type { ContractOperationInfo, FuzzRequest } from './fuzz-requests.ts';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

export interface Failure {
  index: number;
  request: FuzzRequest;
  /** The target as sent, seeded values filled in. */
  target: string;
  status: number | 'no answer';
  problem: string;
  /** What the service logged for the request (5xx), when it did. */
  serverError?: string;
}

const isJson = (contentType: string | null) => /^application\/(?:[\w.-]+\+)?json\b/.test(contentType ?? '');

function envelopeProblem(body: unknown): string | undefined {
  const envelope = body as { success?: unknown; error?: { code?: unknown; message?: unknown; details?: unknown } } | null;
  if (envelope?.success !== false) return 'error body without success:false';
  if (typeof envelope.error?.code !== 'string' || typeof envelope.error.message !== 'string') return 'error body without error.code and error.message';
  if (envelope.error.details !== undefined && !Array.isArray(envelope.error.details)) return 'error.details is not an array';
  return undefined;
}

function statusDocumented(responses: string[], status: number): boolean {
  return responses.includes(String(status)) || responses.includes(`${String(status)[0]}XX`) || responses.includes('default');
}

/** Operations served outside the API prefix, as matchers on method and path. */
export function outsideMatchers(operations: ContractOperationInfo[], responses: Map<string, string[]>) {
  return operations.filter((op) => op.outside).map((op) => ({
    operationId: op.operationId,
    method: op.method,
    regex: new RegExp(`^${op.path.replace(/\{storagePath\}/, '.+').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    responses: responses.get(op.operationId) ?? [],
  }));
}

/** Everything wrong with one answer; an empty list when it keeps every promise of the contract. */
export async function problemsOf(
  request: FuzzRequest,
  url: string,
  answer: Answer,
  outside: ReturnType<typeof outsideMatchers>,
): Promise<string[]> {
  const problems: string[] = [];
  const path = new URL(url).pathname;
  // /readyz answers 503 with its own body while a dependency does not answer in time (a busy
  // machine can make a check time out): the contract's not-ready answer, not a fault.
  const notReady = answer.status === 503 && request.method !== 'HEAD' && path === '/readyz' && /"status":"not_ready"/.test(answer.text);
  if (notReady) return answer.headers.get('x-request-id') ? [] : ['X-Request-Id missing'];
  if (answer.status >= 500) problems.push(`HTTP ${answer.status}`);
  if (!answer.headers.get('x-request-id')) problems.push('X-Request-Id missing');
  if (request.method === 'HEAD') return problems;
  let body: unknown = answer.text;
  if (isJson(answer.headers.get('content-type')) && answer.text !== '') {
    try {
      body = JSON.parse(answer.text);
    } catch {
      problems.push('body labelled JSON is not JSON');
      return problems;
    }
  }
  if (answer.status >= 400) {
    const problem = isJson(answer.headers.get('content-type')) ? envelopeProblem(body) : `error answer is ${answer.headers.get('content-type') ?? 'untyped'}, not the JSON envelope`;
    if (problem) problems.push(problem);
  }
  if (path === API_PREFIX || path.startsWith(`${API_PREFIX}/`)) {
    try {
      const response = new Response(null, { status: answer.status, headers: answer.headers });
      await assertMatchesContract(request.method, url, response, body);
    } catch (error) {
      problems.push(`contract: ${(error as Error).message.split('\n')[0]}`);
    }
  } else {
    const match = outside.find((m) => m.method === request.method && m.regex.test(path));
    if (match && !statusDocumented(match.responses, answer.status)) {
      problems.push(`contract: ${answer.status} not documented for ${match.operationId} (documented: ${match.responses.join(', ')})`);
    }
  }
  return [...new Set(problems)];
}

/** A request as text someone can replay with curl: the body printed when short, described when not. */
export function reproduction(failure: Failure): string {
  const { request } = failure;
  const auth = { full: 'Authorization: Bearer <key with every scope>', read: 'Authorization: Bearer <catalog:read key>', none: '', bogus: 'Authorization: Bearer cat_live_unknown', malformed: 'Authorization: <malformed>' }[request.auth];
  const headers = [auth, ...Object.entries(request.headers).map(([k, v]) => `${k}: ${v.length > 80 ? `${JSON.stringify(v.slice(0, 40))}…(${v.length} chars)` : JSON.stringify(v)}`)].filter(Boolean);
  let body = '';
  if (request.body && 'text' in request.body) {
    body = request.body.text.length > 600 ? `body ${JSON.stringify(request.body.text.slice(0, 300))}…(${request.body.text.length} chars)` : `body ${JSON.stringify(request.body.text)}`;
  } else if (request.body && 'raw' in request.body) body = `body ‹${request.body.raw.label}›`;
  else if (request.body) body = `body ‹${request.body.label}› hex ${Buffer.from(request.body.bytes).toString('hex').slice(0, 400)}`;
  return [`${request.method} ${failure.target.length > 300 ? `${failure.target.slice(0, 300)}…` : failure.target}`, ...headers, body].filter(Boolean).join('\n      ');
}

/** Numbers, ids and quoted values out, so one cause makes one class. */
function normalize(text: string): string {
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<uuid>')
    .replace(/"[^"]{0,200}"/g, '"…"')
    .replace(/\d+/g, 'N')
    .slice(0, 240);
}

/** One cause, one class: the status and the problem (for a 5xx, what the service logged), not the operation. */
export function classOf(failure: Failure): string {
  const server = failure.serverError ? ` [server: ${normalize(failure.serverError)}]` : '';
  return `${failure.status}: ${normalize(failure.problem)}${server}`;
}

/** All failures, one entry per class: its count, the operations it hit, and its shortest reproduction. */
export function report(failures: Failure[], replay: (indexes: number[]) => string): string {
  const classes = new Map<string, Failure[]>();
  for (const failure of failures) {
    const key = classOf(failure);
    classes.set(key, [...(classes.get(key) ?? []), failure]);
  }
  const lines: string[] = [`${failures.length} failing answers in ${classes.size} classes:`];
  const sorted = [...classes.entries()].sort((a, b) => b[1].length - a[1].length);
  for (const [key, members] of sorted) {
    const shortest = members.reduce((best, f) => (reproduction(f).length < reproduction(best).length ? f : best));
    const operations = new Map<string, number>();
    for (const f of members) operations.set(`${f.request.operation} ${f.request.method}`, (operations.get(`${f.request.operation} ${f.request.method}`) ?? 0) + 1);
    lines.push(`\n- ${members.length}× ${key}`);
    lines.push(`    operations: ${[...operations].map(([op, n]) => `${op} (${n})`).join(', ')}`);
    lines.push(`    problem: ${shortest.problem}${shortest.serverError ? `\n    server logged: ${shortest.serverError.slice(0, 400)}` : ''}`);
    lines.push(`    e.g. #${shortest.index}: ${reproduction(shortest)}`);
    lines.push(`    replay: ${replay(members.slice(0, 5).map((f) => f.index))}`);
  }
  return lines.join('\n');
}
