/** The schedules pages' query keys: one root, so a change has every schedule view read again. */
export const scheduleKeys = {
  all: ['schedules'] as const,
  list: (status: string) => ['schedules', 'list', { status }] as const,
  one: (id: string) => ['schedules', 'one', id] as const,
  occurrences: (id: string) => ['schedules', 'occurrences', id] as const,
  upcoming: (id: string) => ['schedules', 'upcoming', id] as const,
};
