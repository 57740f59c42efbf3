import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Definition, Step } from '../definition.schemas.ts';
import { checkDefinition, templatesUsed, type DefinitionProblem } from './check-definition.ts';

function definition(steps: Step[], overrides: Partial<Definition> = {}): Definition {
  return { trigger: { type: 'message_received' }, start: steps[0]!.id, steps, ...overrides };
}

const send = (id: string, next?: string): Step => ({ id, type: 'send_message', text: 'Hello {{ contact.name }}', ...(next ? { next } : {}) });
const end: Step = { id: 'done', type: 'end' };

function problemAt(problems: DefinitionProblem[], pointer: string): string {
  const problem = problems.find((candidate) => candidate.pointer === pointer);
  assert.ok(problem, `a problem at ${pointer}, got ${JSON.stringify(problems)}`);
  return problem.message;
}

describe('a sound definition', () => {
  it('has no problem', () => {
    const sound = definition(
      [
        { id: 'greet', type: 'send_template', template: 'welcome', language: 'en_US', parameters: { body: ['{{ contact.name }}'] }, next: 'ask' },
        {
          id: 'ask',
          type: 'wait_for_reply',
          timeout_seconds: 3600,
          match: 'message.type == "text"',
          save_as: 'answer',
          branches: { replied: 'route', timeout: 'done' },
        },
        {
          id: 'route',
          type: 'condition',
          branches: [{ when: 'vars.answer.text.body.contains("yes")', next: 'note' }],
          default: 'ask',
        },
        { id: 'note', type: 'set_variable', name: 'agreed', value: 'true', next: 'later' },
        { id: 'later', type: 'delay', until_local: { time: '09:00', timezone: 'Europe/Berlin' }, next: 'handoff' },
        { id: 'handoff', type: 'handoff', note: 'Agreed at {{ now }}' },
        end,
      ],
      { trigger: { type: 'message_received', filter: 'has(message.text) && message.text.body.contains("hours")' }, input_schema: { type: 'object' } },
    );
    assert.deepEqual(checkDefinition(sound), []);
  });
});

describe('the step graph', () => {
  it('a duplicate step id is refused at the duplicate', () => {
    const problems = checkDefinition(definition([send('a', 'done'), send('a', 'done'), end]));
    assert.equal(problemAt(problems, '/definition/steps/1/id'), 'step id a is already used by /definition/steps/0');
  });

  it('start must name a step', () => {
    const problems = checkDefinition(definition([send('a', 'done'), end], { start: 'nowhere' }));
    assert.equal(problemAt(problems, '/definition/start'), 'no step has the id nowhere');
  });

  it('a next to a missing step is refused at that next', () => {
    const problems = checkDefinition(
      definition([send('a'), send('b', 'missing'), end].map((step, index) => (index === 0 ? { ...step, next: 'b' } : step))),
      'x',
    );
    assert.equal(problemAt(problems, 'x/steps/1/next'), 'no step has the id missing');
  });

  it('every kind of reference is checked', () => {
    const problems = checkDefinition(
      definition([
        { id: 'a', type: 'send_message', text: 'hi', on_window_closed: 'nope1', next: 'b', on_error: 'nope2' },
        { id: 'b', type: 'wait_for_reply', timeout_seconds: 60, branches: { replied: 'c', timeout: 'nope3' } },
        {
          id: 'c',
          type: 'condition',
          branches: [
            { when: 'true', next: 'd' },
            { when: 'false', next: 'nope4' },
          ],
          default: 'nope5',
        },
        {
          id: 'd',
          type: 'http_request',
          connector_account_id: 'cna_01J0000000000000000000000A',
          method: 'GET',
          path: '/x',
          branches: { ok: 'e', error: 'nope6' },
        },
        { id: 'e', type: 'request_approval', title: 'ok?', action_step: 'nope7', approvers: { roles: ['owner'] }, branches: { rejected: 'nope8' } },
      ]),
    );
    assert.deepEqual(
      problems.map((problem) => problem.pointer),
      [
        '/definition/steps/0/on_window_closed',
        '/definition/steps/0/on_error',
        '/definition/steps/1/branches/timeout',
        '/definition/steps/2/branches/1/next',
        '/definition/steps/2/default',
        '/definition/steps/3/branches/error',
        '/definition/steps/4/action_step',
        '/definition/steps/4/branches/rejected',
      ],
    );
    assert.ok(problems.every((problem) => /^no step has the id nope\d$/.test(problem.message)));
  });

  it('on_window_closed takes fail, skip or a step', () => {
    for (const action of ['fail', 'skip', 'done']) {
      assert.deepEqual(checkDefinition(definition([{ id: 'a', type: 'send_message', text: 'hi', on_window_closed: action, next: 'done' }, end])), []);
    }
  });

  it('an unreachable step is refused at the step', () => {
    const problems = checkDefinition(definition([send('a', 'done'), send('orphan', 'done'), end]));
    assert.deepEqual(problems, [{ pointer: '/definition/steps/1', message: 'step orphan is never reached from start' }]);
  });

  it('an action step reached only through its approval is reached', () => {
    const steps: Step[] = [
      { id: 'ask', type: 'request_approval', title: 'Refund {{ input.order_id }}?', action_step: 'refund', approvers: { roles: ['admin'] } },
      { id: 'refund', type: 'set_tags', add: ['refunded'] },
    ];
    assert.deepEqual(checkDefinition(definition(steps, { trigger: { type: 'api' } })), []);
  });

  it("an approval's action_step must act, and its approved branch can only be that step", () => {
    const steps: Step[] = [
      { id: 'ask', type: 'request_approval', title: 'Go?', action_step: 'think', approvers: { roles: ['admin'] }, branches: { approved: 'other' } },
      { id: 'think', type: 'set_variable', name: 'n', value: '1', next: 'other' },
      { id: 'other', type: 'end' },
    ];
    assert.deepEqual(checkDefinition(definition(steps, { trigger: { type: 'api' }, start: 'ask' })), [
      {
        pointer: '/definition/steps/0/action_step',
        message: 'step think is a set_variable step; an approval gates a step that acts (send_message, send_template, set_tags, assign, handoff, http_request)',
      },
      { pointer: '/definition/steps/0/branches/approved', message: 'must be the action_step (think) or left out: an approved run carries out its action step' },
    ]);
    const sound: Step = { ...steps[0]!, action_step: 'tag', branches: { approved: 'tag' } } as Step;
    assert.deepEqual(checkDefinition(definition([sound, { id: 'tag', type: 'set_tags', add: ['ok'] }], { trigger: { type: 'api' }, start: 'ask' })), []);
  });

  it('a cycle without a waiting step is refused, naming its steps', () => {
    const problems = checkDefinition(definition([send('a', 'b'), { id: 'b', type: 'set_variable', name: 'n', value: '1', next: 'c' }, send('c', 'a')]));
    assert.deepEqual(problems, [
      {
        pointer: '/definition/steps/0',
        message: 'steps a → b → c → a form a loop without a step that waits (wait_for_reply, delay or request_approval): a run could spin through it',
      },
    ]);
  });

  it('a step that leads to itself is a cycle', () => {
    const problems = checkDefinition(
      definition([send('a', 'b'), { id: 'b', type: 'condition', branches: [{ when: 'true', next: 'b' }], default: 'done' }, end]),
    );
    assert.match(problemAt(problems, '/definition/steps/1'), /^steps b → b form a loop/);
  });

  it('the same cycle through a wait_for_reply is accepted', () => {
    const steps: Step[] = [
      send('a', 'b'),
      { id: 'b', type: 'set_variable', name: 'n', value: '1', next: 'c' },
      send('c', 'wait'),
      { id: 'wait', type: 'wait_for_reply', timeout_seconds: 60, branches: { replied: 'a', timeout: 'done' } },
      end,
    ];
    assert.deepEqual(checkDefinition(definition(steps)), []);
  });

  it('a cycle through a delay or an approval is accepted too', () => {
    const delay: Step = { id: 'pause', type: 'delay', seconds: 60, next: 'a' };
    assert.deepEqual(checkDefinition(definition([send('a', 'pause'), delay])), []);
    const approval: Step = { id: 'ok', type: 'request_approval', title: 'Again?', action_step: 'a', approvers: { member_ids: [] } };
    assert.deepEqual(checkDefinition(definition([send('a', 'ok'), approval])), []);
  });

  it('one waiting step does not excuse a second cycle beside it', () => {
    const steps: Step[] = [
      { id: 'a', type: 'condition', branches: [{ when: 'vars.n > 1', next: 'b' }], default: 'wait' },
      send('b', 'a'),
      { id: 'wait', type: 'wait_for_reply', timeout_seconds: 60, branches: { replied: 'a' } },
    ];
    const problems = checkDefinition(definition(steps));
    assert.equal(problems.length, 1);
    assert.match(problemAt(problems, '/definition/steps/0'), /^steps a → b → a form a loop/);
  });
});

describe('the trigger', () => {
  it('event is required exactly for event triggers', () => {
    assert.equal(
      problemAt(checkDefinition(definition([end], { trigger: { type: 'event' } })), '/definition/trigger/event'),
      'is required for an event trigger',
    );
    assert.deepEqual(checkDefinition(definition([end], { trigger: { type: 'event', event: 'contact.created' } })), []);
    assert.match(
      problemAt(checkDefinition(definition([end], { trigger: { type: 'api', event: 'contact.created' } })), '/definition/trigger/event'),
      /only for event/,
    );
  });

  it('a filter is only for message, conversation and event triggers', () => {
    assert.deepEqual(checkDefinition(definition([end], { trigger: { type: 'conversation_created', filter: 'true' } })), []);
    for (const type of ['api', 'schedule'] as const) {
      assert.match(problemAt(checkDefinition(definition([end], { trigger: { type, filter: 'true' } })), '/definition/trigger/filter'), /only for/);
    }
  });

  it('a filter with a syntax error is refused with its position', () => {
    const problems = checkDefinition(definition([end], { trigger: { type: 'message_received', filter: 'message.type == ' } }));
    assert.match(problemAt(problems, '/definition/trigger/filter'), /\(at column \d+\)$/);
  });

  it('a filter must be a bool', () => {
    const problems = checkDefinition(definition([end], { trigger: { type: 'message_received', filter: '"text"' } }));
    assert.equal(problemAt(problems, '/definition/trigger/filter'), 'the expression must be bool, not string');
  });
});

describe('expressions and texts in steps', () => {
  it('every expression and text is checked where it is written', () => {
    const steps: Step[] = [
      { id: 'a', type: 'send_message', text: 'Hi {{ foo }}', next: 'b' },
      { id: 'b', type: 'send_message', media: { type: 'image', link: 'https://x.test/a.png', caption: '{{ 1 + }}' }, next: 'b2' },
      {
        id: 'b2',
        type: 'send_message',
        interactive: { type: 'button', body: { text: 'Pick {{ nobody }}' }, action: { buttons: [{ type: 'reply', reply: { id: 'y', title: 'Yes' } }] } },
        next: 'c',
      },
      { id: 'c', type: 'wait_for_reply', timeout_seconds: 60, match: 'nope.x', branches: { replied: 'd' } },
      {
        id: 'd',
        type: 'condition',
        branches: [
          { when: 'true', next: 'e' },
          { when: 'bar', next: 'e' },
        ],
      },
      { id: 'e', type: 'set_variable', name: 'v', value: '1 +', next: 'f' },
      { id: 'f', type: 'delay', until: 'baz', next: 'g' },
      {
        id: 'g',
        type: 'http_request',
        connector_account_id: 'cna_01J0000000000000000000000A',
        method: 'POST',
        path: '/orders/{{ qux }}',
        query: { 'a/b': '{{ quux }}' },
        body: '{"a": corge}',
        branches: { ok: 'h' },
      },
      { id: 'h', type: 'request_approval', title: '{{ t1 }}', summary: '{{ t2 }}', action_step: 'i', approvers: {}, branches: { rejected: 'j' } },
      { id: 'i', type: 'send_template', template: 'x', language: 'en', parameters: { body: [{ type: 'text', text: '{{ t3 }}' }], buttons: [] } },
      { id: 'j', type: 'handoff', note: '{{ t4 }}' },
    ];
    const problems = checkDefinition(definition(steps));
    assert.deepEqual(
      problems.map((problem) => problem.pointer),
      [
        '/definition/steps/0/text',
        '/definition/steps/1/media/caption',
        '/definition/steps/2/interactive/body/text',
        '/definition/steps/3/match',
        '/definition/steps/4/branches/1/when',
        '/definition/steps/5/value',
        '/definition/steps/6/until',
        '/definition/steps/7/path',
        '/definition/steps/7/query/a~1b',
        '/definition/steps/7/body',
        '/definition/steps/8/title',
        '/definition/steps/8/summary',
        '/definition/steps/9/parameters/body/0/text',
        '/definition/steps/10/note',
      ],
    );
    assert.match(problemAt(problems, '/definition/steps/0/text'), /^hole 1 \(\{\{ foo \}\}\): undeclared reference to 'foo'/);
    assert.match(problemAt(problems, '/definition/steps/5/value'), /at column/);
  });

  it('a delay until must be a timestamp or a string', () => {
    const delay = (until: string): Definition => definition([{ id: 'a', type: 'delay', until, next: 'done' }, end]);
    assert.deepEqual(checkDefinition(delay('now + duration("1h")')), []);
    assert.deepEqual(checkDefinition(delay('vars.until')), []);
    assert.match(problemAt(checkDefinition(delay('1')), '/definition/steps/0/until'), /must be timestamp or string, not int/);
  });
});

describe('fields that go together', () => {
  it('send_message has exactly one of text, media and interactive', () => {
    const none = checkDefinition(definition([{ id: 'a', type: 'send_message', next: 'done' }, end]));
    assert.match(problemAt(none, '/definition/steps/0'), /exactly one of text, media and interactive/);
    const two = checkDefinition(
      definition([{ id: 'a', type: 'send_message', text: 'hi', media: { type: 'image', media_id: 'med_01J0000000000000000000000A' }, next: 'done' }, end]),
    );
    assert.match(problemAt(two, '/definition/steps/0'), /exactly one of/);
  });

  it('media has exactly one of media_id and link', () => {
    const both = checkDefinition(
      definition([{ id: 'a', type: 'send_message', media: { type: 'image', media_id: 'med_01J0000000000000000000000A', link: 'https://x.test/a.png' } }]),
    );
    assert.equal(problemAt(both, '/definition/steps/0/media'), 'media needs exactly one of media_id and link');
    const neither = checkDefinition(definition([{ id: 'a', type: 'send_message', media: { type: 'image' } }]));
    assert.equal(problemAt(neither, '/definition/steps/0/media'), 'media needs exactly one of media_id and link');
  });

  it('delay has exactly one of seconds, until and until_local, and a real time zone', () => {
    assert.match(problemAt(checkDefinition(definition([{ id: 'a', type: 'delay' }])), '/definition/steps/0'), /exactly one of seconds, until and until_local/);
    assert.match(problemAt(checkDefinition(definition([{ id: 'a', type: 'delay', seconds: 5, until: 'now' }])), '/definition/steps/0'), /exactly one/);
    const zone = checkDefinition(definition([{ id: 'a', type: 'delay', until_local: { time: '09:00', timezone: 'Mars/Olympus' } }]));
    assert.equal(problemAt(zone, '/definition/steps/0/until_local/timezone'), 'Mars/Olympus is not an IANA time zone');
    assert.deepEqual(checkDefinition(definition([{ id: 'a', type: 'delay', until_local: { time: '09:00', timezone: 'America/Sao_Paulo' } }])), []);
  });
});

describe('the definition as a whole', () => {
  it('input_schema must compile as a JSON Schema', () => {
    const bad = checkDefinition(definition([end], { input_schema: { type: 'objekt' } }));
    assert.match(problemAt(bad, '/definition/input_schema'), /^is not a valid JSON Schema: /);
    const typo = checkDefinition(definition([end], { input_schema: { type: 'object', requried: ['a'] } }));
    assert.match(problemAt(typo, '/definition/input_schema'), /requried/);
    const lookahead = checkDefinition(definition([end], { input_schema: { type: 'string', pattern: '^(?=a)' } }));
    assert.match(problemAt(lookahead, '/definition/input_schema'), /regexp/);
    assert.deepEqual(checkDefinition(definition([end], { input_schema: { properties: { a: { type: 'string', pattern: '^[a-z]+$' } }, required: ['a'] } })), []);
  });

  it('a definition over 256 KB is refused at its root', () => {
    const big = definition([end], { input_schema: { description: 'y'.repeat(256 * 1024) } });
    const problems = checkDefinition(big, '/definition');
    assert.match(problemAt(problems, '/definition'), /the most is 262144/);
    assert.equal(problems[0]!.pointer, '/definition');
    assert.deepEqual(checkDefinition(definition([end], { input_schema: { description: 'y'.repeat(250 * 1024) } })), []);
  });

  it('problems come in document order', () => {
    const problems = checkDefinition(
      definition([send('a', 'missing'), { id: 'b', type: 'delay' }, send('a', 'done'), end], {
        trigger: { type: 'event' },
        start: 'nowhere',
      }),
    );
    assert.deepEqual(
      problems.map((problem) => problem.pointer),
      ['/definition/trigger/event', '/definition/start', '/definition/steps/0/next', '/definition/steps/1', '/definition/steps/2/id'],
    );
  });
});

describe('templates used', () => {
  it('lists every send_template step with its pointer', () => {
    const steps: Step[] = [
      { id: 'a', type: 'send_template', template: 'welcome', language: 'en_US', next: 'b' },
      send('b', 'c'),
      { id: 'c', type: 'send_template', template: 'bye', language: 'pt_BR' },
    ];
    assert.deepEqual(templatesUsed(definition(steps), '/body'), [
      { pointer: '/body/steps/0', name: 'welcome', language: 'en_US' },
      { pointer: '/body/steps/2', name: 'bye', language: 'pt_BR' },
    ]);
    assert.deepEqual(templatesUsed(definition([end])), []);
  });
});
