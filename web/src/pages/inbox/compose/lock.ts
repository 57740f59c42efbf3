import { useMutation, useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useRef } from 'react';
import { ApiError, type ApiClient } from '../../../api/client.ts';
import { queryKeys } from '../../../api/keys.ts';
import { useApi, useSignedIn } from '../../../auth/SessionContext.tsx';
import type { ConversationLock } from './types.ts';

/**
 * The lease the composer takes (docs/locks.md). The idle period is short so that a closed tab frees
 * the conversation within a minute; the tab renews well inside it while the member is replying.
 */
export const LEASE = { ttl_seconds: 300, idle_seconds: 60 } as const;
/** Renew when the last acquisition or renewal is older than this: three chances inside the idle period. */
const RENEW_AFTER_MS = 20_000;
/** Stop holding a conversation the member stopped typing into this long ago… */
const ACTIVE_FOR_MS = 120_000;
/** …or left (the reply box lost focus) this long ago. */
const AWAY_FOR_MS = 30_000;
const TICK_MS = 5_000;

/** The lock a `conversation_locked` error carries in `error.lock`. */
export function lockOf(error: unknown): ConversationLock | null {
  if (!(error instanceof ApiError) || error.code !== 'conversation_locked') return null;
  const lock = error.body.lock as ConversationLock | undefined;
  return lock?.object === 'lock' ? lock : null;
}

/** The lock that binds the conversation now; null when it is free (the API answers 404). */
export function useLock(conversationId: string) {
  const api = useApi();
  const me = useSignedIn().member.id;
  const query = useQuery({
    queryKey: queryKeys.lock(conversationId),
    queryFn: async () => {
      try {
        return await api.get<ConversationLock>(`/v1/conversations/${conversationId}/lock`);
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }
    },
    staleTime: 10_000,
    // The live stream invalidates this on every lock event; a slow poll while someone else holds it
    // catches a lease that lapsed while the stream was down.
    refetchInterval: (q) => (q.state.data && q.state.data.holder.member_id !== me ? 30_000 : false),
  });
  const lock = query.data?.status === 'held' ? query.data : null;
  return {
    query,
    lock,
    heldByMe: lock?.holder.member_id === me,
    heldByOther: lock !== null && lock.holder.member_id !== me,
  };
}

function lockPath(conversationId: string, action = '') {
  return `/v1/conversations/${conversationId}/lock${action}`;
}

/** What every lock write does with its answer: the lock as it is now goes into the cache. */
function settleLock(queryClient: QueryClient, conversationId: string) {
  return {
    onSuccess: (lock: ConversationLock | null) => queryClient.setQueryData(queryKeys.lock(conversationId), lock?.status === 'held' ? lock : null),
    onError: (error: unknown) => {
      const current = lockOf(error);
      if (current) queryClient.setQueryData(queryKeys.lock(conversationId), current);
      // Nobody holds it after all (409 invalid_state), or something else changed: read it again.
      else void queryClient.invalidateQueries({ queryKey: queryKeys.lock(conversationId) });
    },
  };
}

export function acquireLock(api: ApiClient, conversationId: string) {
  return api.post<ConversationLock>(lockPath(conversationId), LEASE);
}

export function releaseLock(api: ApiClient, conversationId: string) {
  return api.delete<ConversationLock>(lockPath(conversationId));
}

/** Asking for a handover, and handing over: the buttons of the lock notices. */
export function useLockActions(conversationId: string) {
  const api = useApi();
  const queryClient = useQueryClient();
  const settle = settleLock(queryClient, conversationId);
  const request = useMutation({
    mutationFn: () => api.post<ConversationLock>(lockPath(conversationId, '/request'), {}),
    ...settle,
  });
  const transfer = useMutation({
    mutationFn: (memberId: string) => api.post<ConversationLock>(lockPath(conversationId, '/transfer'), { member_id: memberId }),
    ...settle,
  });
  const release = useMutation({
    mutationFn: async () => {
      await releaseLock(api, conversationId);
      return null;
    },
    ...settle,
  });
  return { request, transfer, release };
}

/**
 * The composer's hold on the conversation: acquired when the member starts typing, renewed while
 * they keep at it, released after sending, after they stopped or left, and when the composer goes.
 * Timing is measured on this machine's clock from when answers arrived, never against the lock's
 * own deadlines, which are on the server's clock.
 */
export function useLease(conversationId: string) {
  const api = useApi();
  const queryClient = useQueryClient();
  const { lock, heldByMe, heldByOther } = useLock(conversationId);
  const state = useRef({ busy: false, lastRenewal: 0, lastActivity: 0, leftAt: null as number | null, held: false, blocked: false });
  state.current.held = heldByMe;
  state.current.blocked = heldByOther;

  const write = useCallback(
    async (kind: 'acquire' | 'release') => {
      const s = state.current;
      if (s.busy) return;
      s.busy = true;
      const settle = settleLock(queryClient, conversationId);
      try {
        if (kind === 'acquire') {
          settle.onSuccess(await acquireLock(api, conversationId));
          s.lastRenewal = Date.now();
        } else {
          await releaseLock(api, conversationId);
          settle.onSuccess(null);
        }
      } catch (error) {
        settle.onError(error);
      } finally {
        s.busy = false;
      }
    },
    [api, conversationId, queryClient],
  );

  // Becoming the holder without acquiring (a handover, a reload): count it as activity, so the lease
  // is kept for the new holder's first minutes rather than dropped at the next tick.
  const wasHeld = useRef(false);
  useEffect(() => {
    if (heldByMe && !wasHeld.current) {
      const now = Date.now();
      state.current.lastActivity = Math.max(state.current.lastActivity, now);
      state.current.lastRenewal = Math.max(state.current.lastRenewal, now);
    }
    wasHeld.current = heldByMe;
  }, [heldByMe, lock?.renewed_at]);

  useEffect(() => {
    if (!heldByMe) return;
    const timer = setInterval(() => {
      const s = state.current;
      const now = Date.now();
      if (now - s.lastActivity >= ACTIVE_FOR_MS || (s.leftAt !== null && now - s.leftAt >= AWAY_FOR_MS)) void write('release');
      else if (now - s.lastRenewal >= RENEW_AFTER_MS) void write('acquire');
    }, TICK_MS);
    return () => clearInterval(timer);
  }, [heldByMe, write]);

  // Leaving the conversation (another one opened, the page left) lets go of it.
  useEffect(
    () => () => {
      if (!state.current.held) return;
      void releaseLock(api, conversationId).then(
        () => queryClient.setQueryData(queryKeys.lock(conversationId), null),
        () => queryClient.invalidateQueries({ queryKey: queryKeys.lock(conversationId) }),
      );
    },
    [api, conversationId, queryClient],
  );

  return {
    lock,
    heldByMe,
    heldByOther,
    /** A keystroke in the reply box. */
    typed() {
      const s = state.current;
      const now = Date.now();
      s.lastActivity = now;
      s.leftAt = null;
      if (s.blocked) return;
      if (!s.held || now - s.lastRenewal >= RENEW_AFTER_MS) void write('acquire');
    },
    focused() {
      state.current.leftAt = null;
    },
    left() {
      state.current.leftAt = Date.now();
    },
    /** After a send: the reply is out, the conversation is free again. */
    done() {
      if (state.current.held) void write('release');
    },
    /** A refusal that names the lock (a send into a conversation someone else took). */
    refusedBy(lock: ConversationLock) {
      queryClient.setQueryData(queryKeys.lock(conversationId), lock);
    },
  };
}
