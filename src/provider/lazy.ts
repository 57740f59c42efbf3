/**
 * A provider built on its first call. The composition root needs one before the server listens, but
 * the embedded sandbox's address is known only once it does.
 */
export function lazily<T extends object>(create: () => T): { instance: T; created: () => T | undefined } {
  let built: T | undefined;
  const instance = new Proxy({} as T, {
    get(_target, name) {
      built ??= create();
      const value: unknown = Reflect.get(built, name);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(built) : value;
    },
  });
  return { instance, created: () => built };
}
