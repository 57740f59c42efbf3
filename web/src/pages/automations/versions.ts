import { useQuery } from '@tanstack/react-query';
import { useApi } from '../../auth/SessionContext.tsx';
import { automationKeys, type AutomationVersion } from './api.ts';

/** One version of an automation; versions never change, so it is read once. */
export function useVersion(automationId: string, number: number | null) {
  const api = useApi();
  return useQuery({
    queryKey: automationKeys.version(automationId, number ?? 0),
    queryFn: () => api.get<AutomationVersion>(`/v1/automations/${automationId}/versions/${number}`),
    enabled: number !== null && number > 0,
    staleTime: Infinity,
  });
}
