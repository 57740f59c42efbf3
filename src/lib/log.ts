/** What services need of a logger: pino's call shape, without depending on the HTTP layer's logger type. */
export interface Log {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}
