/** The audit log's filters, kept in the URL so a filtered view can be bookmarked and linked to (a key's history). */
export interface AuditLogSearch {
  action?: string;
  target_id?: string;
}

/** Read by the router (outside the page's lazy chunk), so it stays this small. */
export function parseAuditLogSearch(search: Record<string, unknown>): AuditLogSearch {
  const text = (value: unknown) => (typeof value === 'string' && value.trim() ? value.trim() : undefined);
  const action = text(search.action);
  const target = text(search.target_id);
  return { ...(action ? { action } : {}), ...(target ? { target_id: target } : {}) };
}
