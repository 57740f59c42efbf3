/**
 * Real-browser tests: Debian's Chromium driven by playwright-core (no browser download exists on
 * these machines; `.ci/run` installs the package). One browser per test file, a fresh context per
 * test; a test fails on any error the page throws or logs, and leaves a screenshot when it fails.
 *
 * Chromium missing is a failure, never a skip: install it with `apt-get install chromium`, or point
 * CHROMIUM_PATH at another build.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ManualClock } from '../../src/lib/clock.ts';
import { startServer, suiteScope, type Scope, type StartOptions, type TestServer } from '../harness.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOTS = path.resolve(import.meta.dirname, '../../test-results/screenshots');

/**
 * Flags for a closed network and a root user: without the background-networking ones Chromium
 * keeps dialling Google's hosts, refused here many at a time.
 */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchBrowser(scope: Scope): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM}: the browser tests need it (apt-get install chromium, or set CHROMIUM_PATH).`);
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  scope.after(() => browser.close());
  return browser;
}

/**
 * A test server whose manual clock starts at the real time: the browser keeps the refresh cookie
 * until the `expires` the server computed, and judges it by its own clock, so a server living in
 * the past would hand out cookies the browser drops at once.
 */
export function startDashboardServer(scope: Scope, options: StartOptions = {}): Promise<TestServer> {
  return startServer(scope, { clock: new ManualClock(new Date().toISOString()), ...options });
}

/**
 * What a browser test file's `describe` shares: one server and one browser, started at once and
 * closed after the suite. Call it in the describe body (it takes the suite's scope there).
 */
export function dashboardSuite(options: StartOptions = {}): Promise<{ server: TestServer; browser: Browser }> {
  const scope = suiteScope();
  return (async () => ({ server: await startDashboardServer(scope, options), browser: await launchBrowser(scope) }))();
}

export interface BrowserSession {
  context: BrowserContext;
  page: Page;
  /** Another tab in the same browser (same cookies), watched for errors like the first. */
  newTab(): Promise<Page>;
}

/**
 * The browser's own line for an HTTP error answer ("Failed to load resource: … 401"): the app
 * meets such answers on purpose (a refresh without a cookie, a lock held by someone else) and
 * shows them itself, so they are not the page's errors.
 */
const NETWORK_NOTICE = /^Failed to load resource: the server responded with a status of \d{3}/;

/**
 * A fresh browser context on the test server (its own cookies: a second person), failing the test
 * on page errors and console errors, and saving a screenshot of every page if the test fails.
 */
export async function openDashboard(t: TestContext, browser: Browser, server: TestServer): Promise<BrowserSession> {
  const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } });
  // One record per test, shared by every person (context) it opens: a second person's must not
  // replace the first's, whose errors and screenshots would then be lost.
  let session = sessions.get(t);
  if (!session) sessions.set(t, (session = { errors: [], pages: [] }));
  const { errors, pages } = session;
  const watch = (page: Page) => {
    pages.push(page);
    page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && !NETWORK_NOTICE.test(message.text())) errors.push(`console error: ${message.text()}`);
    });
    return page;
  };
  const page = watch(await context.newPage());
  context.setDefaultTimeout(10_000);
  t.after(async () => {
    await context.close();
  });
  return { context, page, newTab: async () => watch(await context.newPage()) };
}

const sessions = new WeakMap<TestContext, { errors: string[]; pages: Page[] }>();

/**
 * Wraps a browser test's body: a failure saves a screenshot of each page it opened (under
 * test-results/screenshots), and errors the pages threw or logged fail a test that otherwise passed.
 */
export function browserTest(body: (t: TestContext) => Promise<void>): (t: TestContext) => Promise<void> {
  return async (t) => {
    try {
      await body(t);
    } catch (error) {
      await screenshot(t);
      throw error;
    }
    const session = sessions.get(t);
    if (session && session.errors.length > 0) {
      await screenshot(t);
      throw new Error(`the page reported errors:\n${session.errors.join('\n')}`);
    }
  };
}

async function screenshot(t: TestContext): Promise<void> {
  const session = sessions.get(t);
  if (!session) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  const base = t.fullName.replace(/[^a-z0-9]+/gi, '-').slice(0, 120);
  for (const [index, page] of session.pages.entries()) {
    if (page.isClosed()) continue;
    await page.screenshot({ path: path.join(SCREENSHOTS, `${base}-${index}.png`), fullPage: true }).catch(() => undefined);
  }
}

/**
 * Signs a member in as a returning visitor would arrive: a session opened through the API
 * (`POST /auth/login`, what the sign-in page sends) from the page's own context, so the browser
 * keeps its refresh cookie, then `at` opened, which resumes that session from the cookie. A page
 * load and the typing are saved for every test that is not about signing in; the sign-in form
 * itself is driven in session.test.ts. It is a session of its own, as a typed sign-in is: the
 * member's API token stays valid. Waits for the inbox, or anywhere else for the signed-in shell.
 */
export async function signIn(page: Page, member: { email: string; password: string }, at = '/dashboard/inbox'): Promise<void> {
  const login = await page.request.post('/auth/login', { data: { email: member.email, password: member.password } });
  if (login.status() !== 200) throw new Error(`sign-in of ${member.email} refused: ${login.status()} ${await login.text()}`);
  await page.goto(at);
  if (at === '/dashboard/inbox') await page.getByRole('heading', { name: 'Inbox' }).waitFor();
  else await page.getByTestId('member-role').waitFor();
}

/**
 * Every control on the page has an accessible name (a label, aria-label, aria-labelledby, or text
 * for a button or link), and can take keyboard focus: the dashboard's quality bar, checked on each
 * page a test visits rather than by a reviewer's eye. Answers the controls that fail.
 */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(UNLABELLED_CONTROLS);
}

// Runs in the page, so it is JavaScript in a string: the test project has no DOM types (adding them
// would change how Node's own types read everywhere else).
const UNLABELLED_CONTROLS = `(() => {
  const fields = (el) => el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement;
  const failures = [];
  const controls = document.querySelectorAll('button, a[href], input:not([type="hidden"]), select, textarea, [role="button"], [role="option"], [tabindex]');
  for (const control of controls) {
    if (control.closest('[aria-hidden="true"]') || control.getAttribute('tabindex') === '-1') continue;
    const labelled =
      Boolean(control.getAttribute('aria-label')?.trim()) ||
      Boolean(control.getAttribute('aria-labelledby')) ||
      (fields(control) && (control.labels?.length ?? 0) > 0) ||
      (!fields(control) && Boolean(control.textContent?.trim())) ||
      Boolean(control.getAttribute('title')?.trim());
    const focusable = control.tabIndex >= 0 || control.disabled;
    if (!labelled || !focusable) failures.push(control.outerHTML.slice(0, 160));
  }
  return failures;
})()`;
