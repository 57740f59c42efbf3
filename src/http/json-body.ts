import { AppError, invalidParam } from '../lib/errors.ts';

/**
 * JSON request bodies, read strictly. `JSON.parse` keeps the last of two equal keys without a word,
 * so `{"amount": 1, "amount": 100}` would mean whatever the last parser in a chain of proxies
 * thinks; and a `__proto__` key (or `constructor.prototype`) is valid JSON that becomes a prototype
 * the moment anything copies the object with assignment. Both are refused on the pointer of the key.
 *
 * Written here rather than taken from a library: the parsers that report duplicate keys build a
 * syntax tree of every body (momoa, jsonc-parser), several times the cost of `JSON.parse` on the path
 * of every send, and secure-json-parse, which Fastify uses, refuses `__proto__` without saying
 * where. This scan runs after `JSON.parse` accepted the text, so it only needs to track where keys
 * begin and end.
 */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new AppError('malformed_json', 'The Content-Type is application/json but the body is empty.');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    // V8 names the position: "Unexpected token } in JSON at position 12" and the like.
    throw new AppError('malformed_json', `The body is not valid JSON: ${(error as Error).message}.`);
  }
  // A lone value has no keys; the scan is for objects only.
  if (typeof body === 'object' && body !== null) {
    const problem = keyProblemIn(text);
    if (problem) throw invalidParam(problem.pointer, problem.message, problem.code);
  }
  return body;
}

interface KeyProblem {
  pointer: string;
  message: string;
  code: 'duplicate' | 'invalid';
}

interface Frame {
  /** The keys seen so far in an object; undefined for an array. */
  keys: Set<string> | undefined;
  /** The current key of an object, or index of an array: the next container's place in the pointer. */
  at: string | number;
  /** An object is waiting for its next key (after `{` or a comma). */
  expectKey: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

const escapePointer = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

function pointerOf(frames: readonly Frame[], key: string): string {
  return `${frames
    .slice(0, -1)
    .map((frame) => `/${escapePointer(String(frame.at))}`)
    .join('')}/${escapePointer(key)}`;
}

/** The first repeated or prototype-setting key of `text`, which must be valid JSON. */
export function keyProblemIn(text: string): KeyProblem | undefined {
  const frames: Frame[] = [];
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (char === QUOTE) {
      const end = closingQuote(text, index);
      const top = frames.at(-1);
      if (top?.keys !== undefined && top.expectKey) {
        const raw = text.slice(index + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (top.keys.has(key)) return { pointer: pointerOf(frames, key), message: 'appears twice in its object; send each key once', code: 'duplicate' };
        if (key === '__proto__' || (key === 'prototype' && frames.at(-2)?.at === 'constructor')) {
          return { pointer: pointerOf(frames, key), message: `is a key no object takes (it would set the object's prototype)`, code: 'invalid' };
        }
        top.keys.add(key);
        top.at = key;
        top.expectKey = false;
      }
      index = end;
    } else if (char === 0x7b /* { */) {
      frames.push({ keys: new Set(), at: '', expectKey: true });
    } else if (char === 0x5b /* [ */) {
      frames.push({ keys: undefined, at: 0, expectKey: false });
    } else if (char === 0x7d /* } */ || char === 0x5d /* ] */) {
      frames.pop();
    } else if (char === 0x2c /* , */) {
      const top = frames.at(-1)!;
      if (top.keys === undefined) top.at = (top.at as number) + 1;
      else top.expectKey = true;
    }
  }
  return undefined;
}

/** The index of the quote that ends the string opened at `open`: the next one not escaped by an odd run of backslashes. */
function closingQuote(text: string, open: number): number {
  let quote = text.indexOf('"', open + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
}
