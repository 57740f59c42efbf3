import type { Socket } from 'node:net';

/** Resolves when the socket has closed; unlike events.once, an ECONNRESET on the way is not a failure. */
export function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve();
    socket.on('error', () => undefined);
    socket.once('close', () => resolve());
  });
}
