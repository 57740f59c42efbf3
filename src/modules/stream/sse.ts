/**
 * The Server-Sent Events wire format (WHATWG HTML, "Server-sent events"): fields of one line each,
 * a blank line ending each block. Every `data` written here is JSON from `JSON.stringify`, which
 * never contains a line break, so one `data:` line carries it whole.
 */

/** An event with an id: the client's Last-Event-ID becomes `id`. */
export function eventFrame(id: string, event: string, json: string): string {
  return `id: ${id}\nevent: ${event}\ndata: ${json}\n\n`;
}

/** An event without an id: it leaves the client's Last-Event-ID as it was. */
export function noticeFrame(event: string, json: string): string {
  return `event: ${event}\ndata: ${json}\n\n`;
}

/** A comment: ignored by readers, it keeps proxies and load balancers from closing an idle connection. */
export function commentFrame(text: string): string {
  return `: ${text}\n\n`;
}

/** How long the client waits before reconnecting after the connection drops. */
export function retryFrame(ms: number): string {
  return `retry: ${ms}\n\n`;
}
