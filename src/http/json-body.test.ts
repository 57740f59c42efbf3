import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../lib/errors.ts';
import { keyProblemIn, parseJsonBody } from './json-body.ts';

function refusal(text: string): { code: string; param: string | null; detail: string | undefined } {
  try {
    parseJsonBody(text);
  } catch (error) {
    assert.ok(error instanceof AppError);
    return { code: error.code, param: error.param ?? null, detail: error.details[0]?.code };
  }
  assert.fail(`${text} was accepted`);
}

describe('reading JSON bodies strictly', () => {
  it('parses what JSON.parse parses when every object has distinct, ordinary keys', () => {
    const texts = [
      '{"a":1,"b":{"a":2,"b":[{"a":3},{"a":3}]}}',
      '[{"x":1},{"x":1}]',
      '{"text":"a \\"quoted\\" }{ ,\\\\","other":"\\\\"}',
      '{"__proto__x":1,"x__proto__":2,"constructor":{"name":"c"},"prototype":1}',
      '"a lone string"',
      '42',
      'null',
      '{}',
      '{"":1,"a":{"":2}}',
    ];
    for (const text of texts) assert.deepEqual(parseJsonBody(text), JSON.parse(text), text);
  });

  it('a key given twice is validation_failed (duplicate) on its pointer, however it is escaped', () => {
    assert.deepEqual(refusal('{"name":"a","name":"b"}'), { code: 'validation_failed', param: '/name', detail: 'duplicate' });
    assert.deepEqual(refusal('{"a":1,"\\u0061":2}'), { code: 'validation_failed', param: '/a', detail: 'duplicate' });
    assert.deepEqual(refusal('{"list":[{"ok":1},{"k":1,"k":2}]}'), { code: 'validation_failed', param: '/list/1/k', detail: 'duplicate' });
    assert.deepEqual(refusal('{"m":{"a/b~c":1,"a/b~c":2}}'), { code: 'validation_failed', param: '/m/a~1b~0c', detail: 'duplicate' });
    assert.deepEqual(refusal('[[1,2],{"z":{},"z":[]}]'), { code: 'validation_failed', param: '/1/z', detail: 'duplicate' });
  });

  it('a __proto__ key anywhere, or constructor.prototype, is refused on its pointer: it is valid JSON, so it is not malformed', () => {
    assert.deepEqual(refusal('{"__proto__":{"admin":true}}'), { code: 'validation_failed', param: '/__proto__', detail: 'invalid' });
    assert.deepEqual(refusal('{"metadata":{"\\u005f_proto__":1}}'), { code: 'validation_failed', param: '/metadata/__proto__', detail: 'invalid' });
    assert.deepEqual(refusal('{"a":[{"constructor":{"prototype":{}}}]}'), {
      code: 'validation_failed',
      param: '/a/0/constructor/prototype',
      detail: 'invalid',
    });
  });

  it('text that is not JSON is malformed_json, with what the parser saw; an empty body says so', () => {
    const broken = refusal('{"a":');
    assert.equal(broken.code, 'malformed_json');
    assert.equal(refusal('').code, 'malformed_json');
    assert.throws(() => parseJsonBody('{"a":'), /not valid JSON: .+/);
  });

  it('the scan finds nothing in long strings full of quotes, escapes and braces', () => {
    const value = '\\"{}[],:'.repeat(10_000);
    assert.equal(keyProblemIn(`{"a":"${value}","b":"${value}"}`), undefined);
  });
});
