import { useQueryClient } from '@tanstack/react-query';
import { createContext, use, useEffect, useState, type ReactNode } from 'react';
import { fetchConversation } from '../api/inbox.ts';
import { useSession, useSignedIn } from '../auth/SessionContext.tsx';
import { createDispatcher } from './dispatch.ts';
import { startEventStream, type LiveStatus } from './stream.ts';
import { publishLiveEvent } from './subscribe.ts';
import styles from './live.module.css';

const LiveStatusContext = createContext<LiveStatus>('stopped');

/**
 * The live stream for the signed-in part of the app: one per tab, opened once the member is signed
 * in and closed when they sign out (or another member signs in), its events applied to the query
 * cache. Children read the connection's state with `useLiveStatus()`.
 */
export function LiveUpdates({ children }: { children: ReactNode }) {
  const session = useSession();
  const queryClient = useQueryClient();
  const memberId = useSignedIn().member.id;
  const [status, setStatus] = useState<LiveStatus>('connecting');
  useEffect(() => {
    const dispatcher = createDispatcher(queryClient, (id) => fetchConversation(session.api, id));
    const stream = startEventStream({
      open: (path, options) => session.api.open(path, options),
      currentToken: session.currentToken,
      renew: session.renew,
      onEvent: (event) => {
        dispatcher.apply(event);
        publishLiveEvent(event);
      },
      onStale: dispatcher.stale,
      onStatus: setStatus,
    });
    return () => stream.stop();
  }, [session, queryClient, memberId]);
  return <LiveStatusContext value={status}>{children}</LiveStatusContext>;
}

export function useLiveStatus(): LiveStatus {
  return use(LiveStatusContext);
}

const LABELS: Record<LiveStatus, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  stopped: 'Offline',
};

/** A small badge: whether what the page shows is kept current right now. */
export function LiveIndicator() {
  const status = useLiveStatus();
  return (
    <span className={styles.indicator} data-state={status} data-testid="live-status" role="status" aria-live="polite">
      <span className={styles.dot} aria-hidden="true" />
      {LABELS[status]}
    </span>
  );
}
