/**
 * Sends every case of every operation to a running server, one at a time, and collects what broke.
 * Shared by the test (test/fuzz/fuzz.test.ts) and the larger run (`npm run fuzz`).
 */
import { Pool } from 'undici';
import { answerProblems, type Answer } from './checks.ts';
import { casesFor, type Credential, type FuzzCase } from './mutations.ts';
import type { CredentialKind, Operation, World } from './operations.ts';

/** Longer than any answer can take unless something hangs: a hang check, not a performance assertion. */
export const HANG_MS = 5000;

export interface FuzzTarget {
  url: string;
  credentials: Record<CredentialKind, string>;
  /** Operations whose routes no rate-limit bucket governs (health, the sandbox): `GET /healthz`. */
  unlimited: ReadonlySet<string>;
}

export interface Violation {
  fuzzCase: FuzzCase;
  status: number | undefined;
  answer: string | undefined;
  problems: string[];
}

export interface FuzzReport {
  seed: number;
  casesPerOperation: number;
  operations: number;
  requests: number;
  /** Requests by operation key, and by mutation family. */
  perOperation: Map<string, number>;
  perFamily: Map<string, number>;
  statuses: Map<number, number>;
  violations: Violation[];
  durationMs: number;
}

/**
 * The order operations run in: the API's DELETEs (of the connection the connection key belongs to,
 * among others) after the rest, and the sandbox last, its Graph API before its control API, whose
 * switches may make the provider fail on purpose.
 */
function phaseOf(operation: Operation): number {
  if (operation.path.startsWith('/sandbox/graph/')) return 3;
  if (operation.path.startsWith('/sandbox/')) return 4;
  if (operation.method === 'DELETE' && operation.path.startsWith('/v1/')) return 2;
  return operation.path.startsWith('/runtime/') ? 1 : 0;
}

export function inRunOrder(operations: Operation[]): Operation[] {
  return operations
    .map((operation, index) => ({ operation, index }))
    .sort((a, b) => phaseOf(a.operation) - phaseOf(b.operation) || a.index - b.index)
    .map(({ operation }) => operation);
}

async function send(
  pool: Pool,
  target: FuzzTarget,
  fuzzCase: Pick<FuzzCase, 'method' | 'path' | 'headers' | 'body'> & { credential: Credential },
  hangMs = HANG_MS,
): Promise<Answer> {
  const headers = { ...fuzzCase.headers };
  if (fuzzCase.credential !== 'none') headers.authorization = `Bearer ${target.credentials[fuzzCase.credential]}`;
  const response = await pool.request({
    method: fuzzCase.method,
    path: fuzzCase.path,
    headers,
    body: fuzzCase.body,
    signal: AbortSignal.timeout(hangMs),
  });
  return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
}

function failureOf(error: unknown, hangMs = HANG_MS): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return `no answer within ${hangMs / 1000} s`;
  return `no answer: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
}

export async function runFuzz(
  target: FuzzTarget,
  operations: Operation[],
  world: World,
  options: {
    seed: number;
    cases: number;
    only?: string | undefined;
    /** How long an answer may take before the case counts as a hang (HANG_MS). */
    hangMs?: number;
    onOperation?: ((operation: Operation, done: number, total: number) => void) | undefined;
  },
): Promise<FuzzReport> {
  const started = performance.now();
  const selected = inRunOrder(operations).filter((operation) => options.only === undefined || operation.key.includes(options.only));
  const pool = new Pool(target.url, { connections: 1 });
  const report: FuzzReport = {
    seed: options.seed,
    casesPerOperation: options.cases,
    operations: selected.length,
    requests: 0,
    perOperation: new Map(),
    perFamily: new Map(),
    statuses: new Map(),
    violations: [],
    durationMs: 0,
  };
  try {
    for (const [done, operation] of selected.entries()) {
      options.onOperation?.(operation, done, selected.length);
      for (const fuzzCase of casesFor(operation, world, options.seed, options.cases)) {
        report.requests++;
        report.perOperation.set(operation.key, (report.perOperation.get(operation.key) ?? 0) + 1);
        report.perFamily.set(fuzzCase.family, (report.perFamily.get(fuzzCase.family) ?? 0) + 1);
        try {
          const answer = await send(pool, target, fuzzCase, options.hangMs);
          report.statuses.set(answer.status, (report.statuses.get(answer.status) ?? 0) + 1);
          const problems = answerProblems(operation, answer, !target.unlimited.has(operation.key));
          if (problems.length > 0) report.violations.push({ fuzzCase, status: answer.status, answer: answer.text, problems });
        } catch (error) {
          report.violations.push({ fuzzCase, status: undefined, answer: undefined, problems: [failureOf(error, options.hangMs)] });
        }
      }
    }
  } finally {
    await pool.close();
  }
  report.durationMs = performance.now() - started;
  return report;
}

/** After the run: the process is up, its store ready, and an ordinary request succeeds. */
export async function healthProblems(target: FuzzTarget): Promise<string[]> {
  const pool = new Pool(target.url, { connections: 1 });
  const problems: string[] = [];
  try {
    for (const [path, credential] of [
      ['/healthz', 'none'],
      ['/readyz', 'none'],
      ['/v1/identity', 'organization_key'],
      ['/v1/contacts?limit=1', 'organization_key'],
    ] as const) {
      try {
        const answer = await send(pool, target, { method: 'GET', path, headers: {}, body: undefined, credential });
        if (answer.status !== 200) problems.push(`GET ${path} after the run: ${answer.status} ${answer.text.slice(0, 300)}`);
      } catch (error) {
        problems.push(`GET ${path} after the run: ${failureOf(error)}`);
      }
    }
  } finally {
    await pool.close();
  }
  return problems;
}

const excerpt = (value: string | Uint8Array | undefined, length = 300) => {
  if (value === undefined) return '(none)';
  const text = typeof value === 'string' ? value : Buffer.from(value).toString('latin1');
  return text.length <= length ? JSON.stringify(text) : `${JSON.stringify(text.slice(0, length))}… (${text.length} characters)`;
};

export function describeViolation(violation: Violation): string {
  const { fuzzCase } = violation;
  const headers = Object.entries(fuzzCase.headers).map(([name, value]) => `${name}: ${value.length > 80 ? `${value.slice(0, 80)}… (${value.length})` : value}`);
  return [
    `${fuzzCase.operation.key} case ${fuzzCase.index} [${fuzzCase.family}] ${fuzzCase.note}`,
    `  request: ${fuzzCase.method} ${fuzzCase.path.length > 200 ? `${fuzzCase.path.slice(0, 200)}… (${fuzzCase.path.length})` : fuzzCase.path} as ${fuzzCase.credential}`,
    ...(headers.length > 0 ? [`  headers: ${headers.join('; ')}`] : []),
    `  body: ${excerpt(fuzzCase.body)}`,
    `  answer: ${violation.status ?? '-'} ${excerpt(violation.answer)}`,
    ...violation.problems.map((problem) => `  ✗ ${problem}`),
  ].join('\n');
}

export function summarize(report: FuzzReport): string {
  const statuses = [...report.statuses.entries()].sort(([a], [b]) => a - b).map(([status, count]) => `${status}: ${count}`);
  const kinds = new Map<string, number>();
  for (const { fuzzCase, problems } of report.violations) {
    for (const problem of problems) kinds.set(`[${fuzzCase.family}] ${problem}`, (kinds.get(`[${fuzzCase.family}] ${problem}`) ?? 0) + 1);
  }
  return [
    `fuzz: seed ${report.seed}, ${report.casesPerOperation} cases per operation, ${report.operations} operations, ${report.requests} requests in ${(report.durationMs / 1000).toFixed(1)} s`,
    `answers: ${statuses.join(', ')}`,
    `violations: ${report.violations.length}`,
    ...[...kinds.entries()].sort(([, a], [, b]) => b - a).map(([kind, count]) => `  ${count} × ${kind}`),
  ].join('\n');
}
