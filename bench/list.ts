/**
 * `list`: `GET /v1/events?limit=25` (the audit log, a cursor-paged list) over 100,000 rows of one
 * organization, against bare Fastify sending the same bytes; then a walk through all 100,000 rows with
 * `after`, one page at a time, to show that the last pages cost what the first ones do (each page is
 * one range scan on the (organization_id, id) index, never an OFFSET).
 *
 * On embedded SQLite; with BENCH_DATABASE_URL set, on a fresh PostgreSQL schema instead. Both stores in
 * one run took about 75 s, past the minute a bench may take, mostly in seeding and walking.
 */
import { Pool } from 'undici';
import type { SeedAuditEventsResult } from './app-commands.ts';
import { measure, printCpuResult, printResult, printTable, requestJson, runBench, startApp, startBaseline, type AppServer, type LoadFigures } from './lib.ts';

const ROWS = 100_000;
const CONNECTIONS = 50;
// Five dashboard sessions, ten connections each, as members' dashboards would call. The limiter never
// caps the load whatever the sessions (startApp raises every bucket), and each login hashes a
// password: 25 sessions took 17 s of the minute on a busy machine.
const SESSIONS = 5;
const WARMUP_SECONDS = 2;
const SECONDS = 6;
const PATH = '/v1/events';
const QUERY = '?limit=25';
// The walk: 100 a page (the largest page the API gives), so about 1,000 pages.
const WALK_LIMIT = 100;
const EDGE_PAGES = 50;
const WALK_WARMUP_PAGES = 100;
const REPLAY_ROUNDS = 3;
const PASSWORD = 'correct horse battery staple';

interface WalkFigures {
  pages: number;
  rows: number;
  /** Means over the first and the last EDGE_PAGES pages, as the walk met them. */
  firstMs: number;
  lastMs: number;
  meanMs: number;
  maxMs: number;
  totalMs: number;
  /** The same first and last pages fetched again, alternately: means per side. */
  replayFirstMs: number;
  replayLastMs: number;
}

interface StoreFigures {
  store: AppServer['store'];
  seeded: SeedAuditEventsResult;
  bodyBytes: number;
  service: LoadFigures;
  baseline: LoadFigures;
  walk: WalkFigures;
}

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

/** Sequential GETs of list pages on one keep-alive connection, each timed to the last byte of its answer. */
function pageReader(url: string, tokens: string[]) {
  const pool = new Pool(url, { connections: 1 });
  let requests = 0;
  return {
    async read(cursor: string | null): Promise<{ ms: number; rows: number; next: string | null }> {
      const path = `${PATH}?limit=${WALK_LIMIT}${cursor === null ? '' : `&after=${cursor}`}`;
      // Sessions in turn, as the load used them.
      const token = tokens[requests++ % tokens.length]!;
      const started = performance.now();
      const response = await pool.request({ method: 'GET', path, headers: { authorization: `Bearer ${token}` } });
      const text = await response.body.text();
      const ms = performance.now() - started;
      if (response.statusCode !== 200) throw new Error(`GET ${path}: ${response.statusCode} ${text}`);
      const page = JSON.parse(text) as { data: unknown[]; next_cursor: string | null };
      return { ms, rows: page.data.length, next: page.next_cursor };
    },
    close: () => pool.close(),
  };
}

/**
 * Pages through the whole list with `after`, timing each page; then fetches its first and last
 * EDGE_PAGES pages again, alternately, REPLAY_ROUNDS times. The walk's own first and last pages are
 * seconds apart, so on a shared machine a burst of other work can land on one side only; the
 * alternating replay gives both sides the same conditions.
 */
async function walk(url: string, tokens: string[]): Promise<WalkFigures> {
  const reader = pageReader(url, tokens);
  try {
    // Thrown away: the first requests with `after` and limit=100 compile what the load never ran.
    let cursor: string | null = null;
    for (let page = 0; page < WALK_WARMUP_PAGES && (page === 0 || cursor !== null); page++) cursor = (await reader.read(cursor)).next;

    const times: number[] = [];
    const cursors: (string | null)[] = [];
    let rows = 0;
    cursor = null;
    const started = performance.now();
    do {
      cursors.push(cursor);
      const page = await reader.read(cursor);
      times.push(page.ms);
      rows += page.rows;
      cursor = page.next;
    } while (cursor !== null);
    const totalMs = performance.now() - started;

    const first = cursors.slice(0, EDGE_PAGES);
    const last = cursors.slice(-EDGE_PAGES);
    const replayFirst: number[] = [];
    const replayLast: number[] = [];
    for (let round = 0; round < REPLAY_ROUNDS; round++) {
      for (let i = 0; i < EDGE_PAGES; i++) {
        replayFirst.push((await reader.read(first[i]!)).ms);
        replayLast.push((await reader.read(last[i]!)).ms);
      }
    }
    return {
      pages: times.length,
      rows,
      firstMs: mean(times.slice(0, EDGE_PAGES)),
      lastMs: mean(times.slice(-EDGE_PAGES)),
      meanMs: mean(times),
      maxMs: Math.max(...times),
      totalMs,
      replayFirstMs: mean(replayFirst),
      replayLastMs: mean(replayLast),
    };
  } finally {
    await reader.close();
  }
}

async function benchStore(): Promise<StoreFigures> {
  const app = await startApp();
  try {
    const email = 'bench@example.com';
    const signup = await requestJson<{ token: string; organization: { id: string }; member: { id: string } }>(`${app.url}/auth/signup`, {
      body: { email, password: PASSWORD, organization_name: 'Bench Ltd' },
      expectStatus: 201,
    });
    // Logins hash a password (scrypt, tens of milliseconds each); a few at a time use both cores.
    const tokens = [signup.token];
    while (tokens.length < SESSIONS) {
      const batch = Math.min(4, SESSIONS - tokens.length);
      const sessions = await Promise.all(
        Array.from({ length: batch }, () => requestJson<{ token: string }>(`${app.url}/auth/login`, { body: { email, password: PASSWORD } })),
      );
      tokens.push(...sessions.map((session) => session.token));
    }
    const connectionHeaders = tokens.map((token) => ({ authorization: `Bearer ${token}` }));
    // After the logins (each of which writes an audit row), so the first page is seeded rows only.
    const seeded = await app.call<SeedAuditEventsResult>('seedAuditEvents', {
      organizationId: signup.organization.id,
      memberId: signup.member.id,
      count: ROWS,
    });

    const sample = await fetch(app.url + PATH + QUERY, { headers: connectionHeaders[0] });
    const body = Buffer.from(await sample.arrayBuffer());
    const contentType = sample.headers.get('content-type') ?? '';
    if (sample.status !== 200) throw new Error(`GET ${PATH}${QUERY}: ${sample.status} ${body.toString()}`);

    const baseline = await startBaseline({ path: PATH, body, contentType });
    const check = await fetch(baseline.url + PATH + QUERY);
    if (!Buffer.from(await check.arrayBuffer()).equals(body) || check.headers.get('content-type') !== contentType) {
      throw new Error('the baseline does not answer with the same bytes and content type as the service');
    }

    const load = { connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS };
    const base = await measure({ url: baseline.url + PATH + QUERY, pid: baseline.pid, ...load });
    await baseline.stop();
    const service = await measure({ url: app.url + PATH + QUERY, pid: app.pid, connectionHeaders, ...load });

    // The load just ended: let its sockets close and its garbage go before timing single requests.
    await new Promise((resolve) => setTimeout(resolve, 500));
    return { store: app.store, seeded, bodyBytes: body.length, service, baseline: base, walk: await walk(app.url, tokens) };
  } finally {
    await app.stop();
  }
}

await runBench('list', async () => {
  console.log(
    `list: GET ${PATH}${QUERY} over ${ROWS.toLocaleString('en')} audit rows of one organization, ${CONNECTIONS} connections ` +
      `(${SESSIONS} dashboard sessions), ${SECONDS} s after ${WARMUP_SECONDS} s of warm-up, against bare Fastify; then a walk ` +
      `through every row with after, ${WALK_LIMIT} a page, one page at a time`,
  );
  const figures = await benchStore();
  const { walk: w } = figures;

  console.log('');
  console.log(
    `store: ${figures.store}; ${figures.seeded.rows.toLocaleString('en')} rows seeded in ${(figures.seeded.ms / 1000).toFixed(1)} s; ` +
      `${figures.bodyBytes}-byte page`,
  );
  console.log('');
  const row = (name: string, load: LoadFigures) => [
    name,
    load.reqPerSec.toFixed(0),
    load.p50Ms.toFixed(0),
    load.p99Ms.toFixed(0),
    load.meanMs.toFixed(2),
    load.cpuUsPerRequest?.toFixed(0) ?? 'n/a',
  ];
  printTable(
    ['target', 'req/s', 'p50 ms', 'p99 ms', 'mean ms', 'server CPU µs/req'],
    [row('service', figures.service), row('baseline (bare Fastify)', figures.baseline)],
  );
  console.log('');
  printTable(
    [`walk, limit=${WALK_LIMIT}`, 'pages', 'rows', `first ${EDGE_PAGES} ms`, `last ${EDGE_PAGES} ms`, 'last/first', 'mean ms', 'max ms', 'total s'],
    [
      [
        'in order',
        String(w.pages),
        String(w.rows),
        w.firstMs.toFixed(2),
        w.lastMs.toFixed(2),
        (w.lastMs / w.firstMs).toFixed(2),
        w.meanMs.toFixed(2),
        w.maxMs.toFixed(1),
        (w.totalMs / 1000).toFixed(1),
      ],
      [
        `replayed alternately, ${REPLAY_ROUNDS} rounds`,
        '',
        '',
        w.replayFirstMs.toFixed(2),
        w.replayLastMs.toFixed(2),
        (w.replayLastMs / w.replayFirstMs).toFixed(2),
        '',
        '',
        '',
      ],
    ],
  );
  console.log('');
  // PostgreSQL's figures carry a suffix, so that no script compares them with SQLite's by mistake.
  const suffix = figures.store === 'sqlite' ? '' : '_pg';
  printResult('list', `req_per_s${suffix}`, figures.service.reqPerSec, figures.baseline.reqPerSec);
  printResult('list', `p99_ms${suffix}`, figures.service.p99Ms, figures.baseline.p99Ms, 2);
  printCpuResult('list', figures.service.cpuUsPerRequest, figures.baseline.cpuUsPerRequest, `server_cpu_us_per_req${suffix}`);
  // From the replay: both sides measured under the same conditions (see walk()).
  printResult('list', `last_page_ms${suffix}`, w.replayLastMs, w.replayFirstMs, 2);
});
