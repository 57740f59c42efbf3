import { useQuery } from '@tanstack/react-query';
import { queryKeys } from '../../../api/keys.ts';
import type { ListPage } from '../../../api/types.ts';
import { useApi, usePermissions, useSignedIn } from '../../../auth/SessionContext.tsx';
import type { Member } from './types.ts';

/**
 * Every member of the organization (`queryKeys.members` holds the whole list, every page followed).
 * `GET /v1/members` is for owners and admins only, so for anyone else this stays empty and members
 * are named without it (see `useMemberName`).
 */
export function useMembers() {
  const api = useApi();
  const { administer } = usePermissions();
  return useQuery({
    queryKey: queryKeys.members,
    enabled: administer,
    staleTime: 5 * 60_000,
    queryFn: async () => {
      const all: Member[] = [];
      let after: string | undefined;
      do {
        const page = await api.get<ListPage<Member>>('/v1/members', { query: { limit: 100, after } });
        all.push(...page.data);
        after = page.has_more && page.next_cursor ? page.next_cursor : undefined;
      } while (after);
      return all;
    },
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
