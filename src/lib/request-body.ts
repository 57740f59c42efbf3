/**
 * The end of a request body that will not be used. A server that answers and closes the connection
 * while the client is still writing its body makes the client's TCP stack see a reset, and a client
 * that writes its whole body before reading (most do) gets the reset instead of the answer: reading
 * the rest first makes a refusal an ordinary answer.
 */
import type { IncomingMessage } from 'node:http';

/**
 * Reads what is left of `request`'s body and throws it away; resolves `true` once all of it has
 * arrived. Resolves `false` without waiting when the body declares more than `maxBytes`, as soon as
 * more than that has arrived, or when the client goes away first: the caller answers anyway, and the
 * connection closes under the rest.
 */
export function discardRequestBody(request: IncomingMessage, maxBytes: number): Promise<boolean> {
  if (request.complete) return Promise.resolve(true);
  if (Number(request.headers['content-length']) > maxBytes) return Promise.resolve(false);
  return new Promise((resolve) => {
    let received = 0;
    const done = (whole: boolean) => {
      request.off('data', onData).off('end', onEnd).off('close', onClose);
      resolve(whole);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxBytes) done(false);
    };
    const onEnd = () => done(true);
    const onClose = () => done(request.complete);
    request.on('data', onData).on('end', onEnd).on('close', onClose);
    request.resume();
  });
}
