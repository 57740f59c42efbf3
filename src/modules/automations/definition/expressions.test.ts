import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ExpressionError,
  MAX_EVALUATION_STEPS,
  checkCondition,
  checkExpression,
  checkText,
  evaluateCondition,
  evaluateExpression,
  renderText,
  type ExpressionContext,
  type ExpressionFailure,
} from './expressions.ts';

const context: ExpressionContext = {
  input: { order_id: 'A-17', count: 3, price: 2.5, items: [{ sku: 'x', qty: 2 }], big: 2 ** 60 },
  vars: { attempts: 1 },
  trigger: { type: 'message_received' },
  message: { type: 'text', text: { body: 'What are your opening hours?' } },
  contact: { name: 'Ana', tags: ['vip', 'es'] },
  conversation: null,
  run: { id: 'run_1' },
  now: '2026-03-01T10:00:00.000Z',
};

function fails(kind: ExpressionFailure, run: () => unknown, message?: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ExpressionError, `an ExpressionError, not ${String(error)}`);
    assert.equal(error.kind, kind, error.message);
    if (message) assert.match(error.message, message);
    return true;
  });
}

const digits = '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]';

describe('checking expressions', () => {
  it('a sound expression over the declared names has no problem', () => {
    assert.equal(checkExpression('message.text.body.contains("hours") && contact.tags.exists(t, t == "vip")'), undefined);
    assert.equal(checkExpression('has(message.text) ? message.text.body : ""'), undefined);
    assert.equal(checkExpression('now + duration("1h") > timestamp("2026-01-01T00:00:00Z")'), undefined);
    assert.equal(checkExpression('input.items.map(i, i.qty).filter(q, q > 1).size() == 1 && input.items.all(i, has(i.sku))'), undefined);
    assert.equal(checkExpression('conversation == null || vars.attempts < 3'), undefined);
  });

  it('a syntax error says what and where', () => {
    assert.equal(checkExpression('1 + + 2'), 'Unexpected token: PLUS (at column 5)');
    assert.match(checkExpression('contact.name ==\n  == "x"')!, /at line 2, column 3\)$/);
  });

  it('an undeclared name is an undeclared reference', () => {
    assert.equal(checkExpression('foo.bar'), "undeclared reference to 'foo' (at column 1)");
    assert.match(checkExpression('contact.tags.exists(t, u == "vip")')!, /undeclared reference to 'u'/);
  });

  it('a type error is found without running', () => {
    assert.match(checkExpression('1 + "a"')!, /no such overload: int \+ string/);
    assert.match(checkExpression('now + 1')!, /no such overload/);
  });

  it('a condition must be a bool, or dyn (known when it runs)', () => {
    assert.equal(checkCondition('contact.name == "Ana"'), undefined);
    assert.equal(checkCondition('input.flag'), undefined);
    assert.equal(checkCondition('"yes"'), 'the expression must be bool, not string');
  });
});

describe('evaluating expressions', () => {
  it('reads the context, with whole JSON numbers as ints and the others as doubles', () => {
    assert.equal(evaluateExpression('input.count + 1', context), 4);
    assert.equal(evaluateExpression('input.price * 2.0', context), 5);
    assert.equal(evaluateExpression('input.count == 3.0', context), true);
    assert.equal(evaluateExpression('contact.name + " " + input.order_id', context), 'Ana A-17');
  });

  it('answers plain JSON: maps as objects, ints beyond 2^53 as strings, timestamps as ISO text, durations as seconds, bytes as base64', () => {
    assert.deepEqual(evaluateExpression('{"a": [1, 2.5, "x", null, true], "b": {"c": input.count}}', context), {
      a: [1, 2.5, 'x', null, true],
      b: { c: 3 },
    });
    assert.equal(evaluateExpression('4611686018427387904 + 1', context), '4611686018427387905');
    assert.equal(evaluateExpression('input.big', context), 2 ** 60);
    assert.equal(evaluateExpression('now + duration("90m")', context), '2026-03-01T11:30:00.000Z');
    assert.equal(evaluateExpression('timestamp("2026-03-01T10:00:01.500Z") - now', context), 1.5);
    assert.equal(evaluateExpression('b"hi"', context), 'aGk=');
    assert.equal(evaluateExpression('type(1)', context), 'int');
  });

  it('a condition is a bool, and anything else is a type failure', () => {
    assert.equal(evaluateCondition('message.text.body.contains("hours") && contact.tags.exists(t, t == "vip")', context), true);
    assert.equal(evaluateCondition('"es" in contact.tags && vars.attempts > 1', context), false);
    fails('type', () => evaluateCondition('input.count', context), /must be a bool, got int/);
  });

  it('a missing key is a runtime failure with the library message; has() guards it', () => {
    fails('runtime', () => evaluateExpression('message.image.id', context), /No such key: image \(at column 9\)/);
    fails('runtime', () => evaluateExpression('conversation.id', context), /No such key: id/);
    assert.equal(evaluateExpression('has(message.image) ? message.image.id : "none"', context), 'none');
    assert.equal(evaluateCondition('conversation == null', context), true);
  });

  it('an unsound expression fails as it failed its check', () => {
    fails('syntax', () => evaluateExpression('1 +', context));
    fails('type', () => evaluateExpression('foo', context), /undeclared reference to 'foo'/);
  });

  it('matches() runs on RE2, in linear time, even on a pattern that makes a backtracking engine explode', () => {
    const text = `${'a'.repeat(5000)}!`;
    assert.equal(evaluateCondition(`input.text.matches("(a+)+$")`, { ...context, input: { text } }), false);
    assert.equal(evaluateCondition(`matches(input.text, "^(a|aa)+!$")`, { ...context, input: { text } }), true);
    assert.equal(evaluateCondition('"order A-17".matches("[A-Z]-[0-9]+")', context), true);
    fails('runtime', () => evaluateCondition('"x".matches("(?=x)")', context), /invalid regular expression/);
  });

  it('a runaway of nested macros stops at the cost cap', () => {
    const nested = `${digits}.map(a, ${digits}.map(b, ${digits}.map(c, ${digits}.map(d, ${digits}.map(e, a + b + c + d + e)))))`;
    fails('cost', () => evaluateExpression(nested, context), new RegExp(`${MAX_EVALUATION_STEPS} steps`));
  });

  it('the cost cap holds where an operand error is swallowed (|| and exists)', () => {
    const nested = `${digits}.exists(a, ${digits}.exists(b, ${digits}.exists(c, ${digits}.exists(d, ${digits}.exists(e, e == 10)))))`;
    fails('cost', () => evaluateCondition(`${nested} || true`, context));
    fails('cost', () => evaluateCondition(`[1, 2].exists(x, x == 2 || ${nested})`, context));
  });

  it('a string or list that doubles itself stops at the cost cap', () => {
    let strings = '"abcdefgh"';
    let lists = '[1, 2, 3, 4, 5, 6, 7, 8]';
    for (let i = 0; i < 40; i++) {
      strings = `[${strings}].map(s, s + s)[0]`;
      lists = `[${lists}].map(l, l + l)[0]`;
    }
    fails('cost', () => evaluateExpression(strings, context), /a string longer than/);
    fails('cost', () => evaluateExpression(lists, context), /a list longer than/);
    fails('cost', () => evaluateExpression(`[${strings}].join(",")`, context));
  });

  it('deep equality of values that nest exponentially stops at the cost cap', () => {
    let nested = 'input.items';
    for (let i = 0; i < 30; i++) nested = `[${nested}].map(l, [l, l, l, l])[0]`;
    fails('cost', () => evaluateCondition(`cel.bind(a, ${nested}, cel.bind(b, ${nested}, a == b))`, context));
  });

  it('a value over 64 KB as JSON is a size failure', () => {
    const words = Array.from({ length: 200 }, () => `"${'x'.repeat(400)}"`).join(', ');
    fails('size', () => evaluateExpression(`[${words}]`, context), /65536 bytes/);
    assert.equal((evaluateExpression(`[${words}].size()`, context) as number) > 0, true);
  });
});

describe('text with holes', () => {
  it('renders each value stringified: strings as they are, null as nothing, numbers and bools as JSON, lists and maps as JSON', () => {
    assert.equal(
      renderText(
        'Hi {{ contact.name }}! n={{input.count}} p={{ input.price }} ok={{ true }} c={{ conversation }} t={{ contact.tags }} m={{ {"a": {"b": 1}} }}',
        context,
      ),
      'Hi Ana! n=3 p=2.5 ok=true c= t=["vip","es"] m={"a":{"b":1}}',
    );
    assert.equal(renderText('at {{ now }}', context), 'at 2026-03-01T10:00:00.000Z');
    assert.equal(renderText('no holes at all', context), 'no holes at all');
  });

  it('a hole ends at the first }} outside its string literals and braces', () => {
    assert.equal(renderText('{{ "}}" }}|{{ {"k": "v"}.k }}', context), '}}|v');
  });

  it('checking names the bad hole', () => {
    assert.equal(checkText('Hello {{ contact.name }}'), undefined);
    assert.equal(checkText('Hello {{ contact.name }}, {{ foo.bar }}'), "hole 2 ({{ foo.bar }}): undeclared reference to 'foo' (at column 1)");
    assert.match(checkText('{{ 1 + }}')!, /^hole 1 \(\{\{ 1 \+ \}\}\): /);
    assert.equal(checkText('Hello {{ contact.name'), 'hole 1 (at character 7) has no closing }}');
    assert.equal(checkText('Hello {{  }}'), 'hole 1 ({{  }}) is empty');
  });

  it('an unclosed hole cannot render', () => {
    fails('syntax', () => renderText('Hello {{ contact.name', context));
  });

  it('the rendered text is capped', () => {
    assert.equal(renderText('{{ contact.name }}', context, 3), 'Ana');
    fails('size', () => renderText('{{ contact.name }}!', context, 3), /longer than 3 characters/);
    fails('size', () => renderText('{{ input.order_id }}', context, 2));
  });

  it('a hole fails as its expression does', () => {
    fails('runtime', () => renderText('{{ message.image.id }}', context));
    fails('cost', () => renderText(`{{ ${digits}.map(a, ${digits}.map(b, ${digits}.map(c, ${digits}.map(d, ${digits}.map(e, 1))))) }}`, context));
  });
});
