import { ApiError, createApiClient, type ApiClient } from '../api/client.ts';
import type { DashboardToken } from '../api/types.ts';

/**
 * The signed-in session: the 15-minute dashboard token, kept in memory only (never in storage a
 * script could read later), renewed through the httpOnly refresh cookie before it lapses and
 * whenever the API refuses it.
 *
 * Several tabs share one session: a renewal rotates the refresh cookie and ends the previous token
 * at once, so tabs take turns (a Web Lock) and hand each other the new token (a BroadcastChannel)
 * instead of each renewing, which the server would treat as a replayed refresh token.
 */
export type SessionState = { status: 'loading' } | { status: 'signed_out'; reason?: string } | { status: 'signed_in'; token: DashboardToken };

const CHANNEL = 'dashboard-session';
const RENEW_LOCK = 'dashboard-session-renewal';
/**
 * Renew a minute before the token's 15 minutes run out, counted from when it arrived: the browser's
 * clock may disagree with the server's, so `expires_at` is not compared with it. A token refused
 * anyway (the server's clock ran ahead, the laptop slept) is renewed on the 401 by the API client.
 */
const RENEW_AFTER_MS = 14 * 60_000;

type Listener = () => void;

export function createSession() {
  let state: SessionState = { status: 'loading' };
  const listeners = new Set<Listener>();
  const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(CHANNEL) : undefined;
  let renewalTimer: ReturnType<typeof setTimeout> | undefined;
  let renewing: Promise<string | null> | undefined;
  let markReady: () => void = () => undefined;
  /** Settles once the first resume() has decided whether a session exists. */
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  function set(next: SessionState, options: { broadcast: boolean }): void {
    state = next;
    clearTimeout(renewalTimer);
    if (next.status === 'signed_in') {
      renewalTimer = setTimeout(() => void renew(next.token.token), RENEW_AFTER_MS);
    }
    if (options.broadcast) channel?.postMessage(next);
    for (const listener of listeners) listener();
  }

  channel?.addEventListener('message', (message: MessageEvent<SessionState>) => {
    if (message.data.status !== 'loading') set(message.data, { broadcast: false });
  });

  function currentToken(): string | null {
    return state.status === 'signed_in' ? state.token.token : null;
  }

  async function refreshWithCookie(): Promise<DashboardToken | null> {
    try {
      return await api.post<DashboardToken>('/auth/refresh', undefined, { anonymous: true });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return null;
      throw error;
    }
  }

  /** Renews the token unless another tab (or an earlier call) already replaced `stale`. */
  function renew(stale: string): Promise<string | null> {
    renewing ??= (async () => {
      const run = async () => {
        const current = currentToken();
        if (current && current !== stale) return current;
        const token = await refreshWithCookie();
        set(token ? { status: 'signed_in', token } : { status: 'signed_out', reason: 'Your session has ended. Sign in again.' }, { broadcast: true });
        return token?.token ?? null;
      };
      return navigator.locks ? navigator.locks.request(RENEW_LOCK, run) : run();
    })().finally(() => {
      renewing = undefined;
    });
    return renewing;
  }

  const api: ApiClient = createApiClient({ current: currentToken, renew });

  return {
    api,
    get state(): SessionState {
      return state;
    },
    subscribe(listener: Listener): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** On page load: the refresh cookie, if any, opens the session without asking for a password. */
    async resume(): Promise<void> {
      const token = await navigator.locks.request(RENEW_LOCK, refreshWithCookie).catch(() => null);
      set(token ? { status: 'signed_in', token } : { status: 'signed_out' }, { broadcast: Boolean(token) });
      markReady();
    },
    ready,
    async signIn(credentials: { email: string; password: string }): Promise<void> {
      const token = await api.post<DashboardToken>('/auth/login', credentials, { anonymous: true });
      set({ status: 'signed_in', token }, { broadcast: true });
    },
    async signUp(details: { email: string; password: string; organization_name: string; name?: string }): Promise<void> {
      const token = await api.post<DashboardToken>('/auth/signup', details, { anonymous: true });
      set({ status: 'signed_in', token }, { broadcast: true });
    },
    /**
     * Accepts an invitation (`POST /v1/invites/accept`) and signs in as the new member. A person who
     * already has an account proves it with a dashboard token of theirs, so the current one is sent
     * when there is one; for a new person the API does not read it.
     */
    async acceptInvite(details: { token: string; password?: string; name?: string }): Promise<DashboardToken> {
      const token = await api.post<DashboardToken>('/v1/invites/accept', details, { anonymous: currentToken() === null });
      set({ status: 'signed_in', token }, { broadcast: true });
      return token;
    },
    async signOut(): Promise<void> {
      // The refresh cookie names the session; a failure still signs this browser out.
      await api.post('/auth/logout', undefined, { anonymous: true }).catch(() => undefined);
      set({ status: 'signed_out' }, { broadcast: true });
    },
    /** For the event stream: the token it should use now, renewed if the stream found it expired. */
    currentToken,
    renew,
  };
}

export type Session = ReturnType<typeof createSession>;
