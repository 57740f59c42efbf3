import { useConnections } from '../connections/connections-data.ts';

/** Words for where an automation or account runs: its connection's name, or every number of its mode. */
export function useRunsOn(): (connectionId: string | null, mode: 'live' | 'test') => string {
  const connections = useConnections();
  return (connectionId, mode) => {
    if (connectionId === null) return `Every ${mode} number`;
    const connection = connections.data?.find((candidate) => candidate.id === connectionId);
    return connection ? (connection.name ?? connection.display_phone_number ?? connection.id) : connectionId;
  };
}
