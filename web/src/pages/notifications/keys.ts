/** The notifications pages' query keys: one root, so a change anywhere has every notification view read again. */
export const notificationKeys = {
  all: ['notifications'] as const,
  list: (filters: { status?: string; batch_id?: string }) => ['notifications', 'list', filters] as const,
  one: (id: string) => ['notifications', 'one', id] as const,
  batch: (id: string) => ['notifications', 'batch', id] as const,
  /** The message a notification produced. */
  message: (id: string) => ['notifications', 'message', id] as const,
};
