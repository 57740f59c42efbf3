/** The few HTML pages the service serves itself (the error reference, the local billing pages). */

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A whole, plain page: `title` is escaped here, `body` must already be safe HTML. */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}code{background:#f2f2f2;padding:0 .25em;border-radius:3px}table{border-collapse:collapse}td,th{text-align:left;padding:.25rem .75rem .25rem 0;vertical-align:top}</style>
</head><body>${body}</body></html>`;
}
