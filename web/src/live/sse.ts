/**
 * A Server-Sent Events reader for a `fetch` response (WHATWG HTML, "Server-sent events"): the
 * browser's EventSource cannot send an Authorization header, so the dashboard reads the stream
 * itself. Lines end in CRLF, LF or CR; a blank line ends a block; `:` starts a comment.
 */
export interface SseMessage {
  /** The block's own `id` field, if it had one (the stream's control notices have none). */
  id: string | undefined;
  /** `message` when the block named no event. */
  event: string;
  data: string;
}

export interface SseBlock {
  message?: SseMessage;
  /**
   * An `id` field in a block without data: no event, but the stream's last event id all the same
   * (the standard's rule), so a server can give a resume point before any event.
   */
  id?: string;
  /** A `retry:` field: the reconnection delay the server asks for, in milliseconds. */
  retry?: number;
}

/** Splits decoded text into blocks; `push` may be called with any slice of the stream. */
export function createSseParser() {
  let buffer = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  let retry: number | undefined;

  function line(text: string, out: SseBlock[]): void {
    if (text === '') {
      const block: SseBlock = {};
      if (data.length > 0) block.message = { id, event: event || 'message', data: data.join('\n') };
      else if (id !== undefined) block.id = id;
      if (retry !== undefined) block.retry = retry;
      if (block.message || block.id !== undefined || block.retry !== undefined) out.push(block);
      id = undefined;
      event = '';
      data = [];
      retry = undefined;
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
  }

  return {
    push(chunk: string): SseBlock[] {
      buffer += chunk;
      const out: SseBlock[] = [];
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const char = buffer[i];
        if (char !== '\n' && char !== '\r') continue;
        // A CR at the very end may be the first half of a CRLF split across two chunks.
        if (char === '\r' && i === buffer.length - 1) break;
        line(buffer.slice(start, i), out);
        if (char === '\r' && buffer[i + 1] === '\n') i++;
        start = i + 1;
      }
      buffer = buffer.slice(start);
      return out;
    },
  };
}

/** The blocks of a response body as they arrive; ends when the server ends the response. */
export async function* readSse(body: ReadableStream<Uint8Array>, onChunk?: () => void): AsyncGenerator<SseBlock> {
  const parser = createSseParser();
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onChunk?.();
      // `stream`: a character split across two chunks is decoded once both have arrived.
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
  } finally {
    // Stopped early (the reader went away) or failed: the connection is not read any further.
    reader.cancel().catch(() => undefined);
  }
}
