import { useQuery } from '@tanstack/react-query';
import { queryKeys } from '../../../api/keys.ts';
import { useApi, useSignedIn } from '../../../auth/SessionContext.tsx';
import type { Member } from './types.ts';

/** Every member of the organization (`queryKeys.members` holds the whole list): every member may read it. */
export function useMembers() {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.members,
    staleTime: 5 * 60_000,
    queryFn: () => api.all<Member>('/v1/members'),
  });
}

export const memberLabel = (member: Pick<Member, 'name' | 'email'>) => member.name ?? member.email;

/**
 * How to name a member in a sentence: "You", their name or email when the member list is readable,
 * else "A teammate" (an agent cannot read the member list).
 */
export function useMemberName(): (memberId: string | null | undefined) => string {
  const me = useSignedIn().member;
  const members = useMembers().data;
  return (memberId) => {
    if (!memberId) return 'Nobody';
    if (memberId === me.id) return 'You';
    const member = members?.find((candidate) => candidate.id === memberId);
    return member ? memberLabel(member) : 'A teammate';
  };
}
