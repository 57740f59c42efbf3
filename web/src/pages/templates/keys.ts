/**
 * The templates page's query keys. Under `['templates', connectionId]` (api/keys.ts), which the live
 * stream invalidates on `template.status_changed` for that number: a review shows up by itself.
 */
export const templateKeys = {
  connection: (connectionId: string) => ['templates', connectionId] as const,
  list: (connectionId: string, status: string) => ['templates', connectionId, 'list', { status }] as const,
};
