import type { HttpServer } from './server.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Answers are written by `JSON.stringify`, not by the response schema's compiled serializer
     * (see below): only for routes whose handler returns objects its module's mapper built field by
     * field, in the order the compiled serializer writes them.
     */
    nativeJson?: boolean;
  }
}

type Serialize = (value: unknown) => string;

/**
 * `JSON.stringify` for the hot read routes that opt in with `config: { nativeJson: true }`.
 *
 * Why: fast-json-stringify writes an object as one string concatenation per key and value, and the
 * rope of a 34 KB conversations page, about three thousand pieces, is flattened again before the
 * socket write can measure it. V8's own `JSON.stringify` writes the same bytes into one flat
 * buffer: 36 µs for that page against 62 µs (measured with the length taken, as Fastify does), about
 * 8 % of the page's CPU.
 *
 * What the route gives up is the compiled serializer's filter: it writes only the schema's
 * properties, in the schema's order (the required ones first, then the optional ones), and coerces
 * values to the schema's types. So an opted-in route's objects must already be exactly that: built
 * by a mapper that names every field, never spread from a row or from stored JSON whose keys it does
 * not control. `check` holds the routes to it: every answer is also written by the compiled
 * serializer, and an answer whose bytes differ fails the request (a 500, so the test that made it
 * fails). The test suite runs with it on (`VERIFY_NATIVE_JSON`); production does not pay for it.
 */
export function registerNativeJsonSerializers(app: HttpServer, options: { check: boolean }): void {
  app.addHook('onRoute', (route) => {
    if (route.config?.nativeJson !== true) return;
    if (route.serializerCompiler) throw new Error(`${String(route.method)} ${route.url}: nativeJson and a serializer compiler of its own exclude each other`);
    route.serializerCompiler = options.check ? (context) => checked(app, context) : () => JSON.stringify;
  });
}

type CompilerContext = Parameters<NonNullable<HttpServer['serializerCompiler']>>[0];

function checked(app: HttpServer, context: CompilerContext): Serialize {
  let compiled: Serialize | undefined;
  return (value) => {
    const native = JSON.stringify(value);
    if (!compiled) {
      const compile = app.serializerCompiler;
      if (!compile) throw new Error('Fastify has no serializer compiler yet');
      compiled = compile(context) as Serialize;
    }
    const expected = compiled(value);
    if (native !== expected) throw new Error(`${context.method} ${context.url} ${context.httpStatus}: ${firstDifference(native, expected)}`);
    return native;
  };
}

/** Where JSON.stringify's bytes part from the compiled serializer's, with some context on each side. */
export function firstDifference(native: string, expected: string): string {
  let at = 0;
  while (at < native.length && at < expected.length && native[at] === expected[at]) at++;
  const around = (text: string) => JSON.stringify(text.slice(Math.max(0, at - 40), at + 40));
  return `JSON.stringify writes ${around(native)} where the response schema's serializer writes ${around(expected)} (character ${at})`;
}
