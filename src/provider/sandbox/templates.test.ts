import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertGraphError, changesOf, sandboxStore, setup, statusesOf, V, type Harness } from './harness.test.ts';

const ORDER_SHIPPED = {
  name: 'order_shipped',
  language: 'en_US',
  category: 'UTILITY',
  components: [
    { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['A-1'] } },
    { type: 'BODY', text: 'Hi {{1}}, your order {{2}} has shipped.', example: { body_text: [['Ada', 'A-1']] } },
    { type: 'FOOTER', text: 'Reply STOP to opt out' },
    {
      type: 'BUTTONS',
      buttons: [
        { type: 'QUICK_REPLY', text: 'Thanks' },
        { type: 'URL', text: 'Track', url: 'https://example.test/track/{{1}}' },
      ],
    },
  ],
};

function shippedComponents(header: string[], body: string[]) {
  const text = (values: string[]) => values.map((value) => ({ type: 'text', text: value }));
  return [...(header.length ? [{ type: 'header', parameters: text(header) }] : []), ...(body.length ? [{ type: 'body', parameters: text(body) }] : [])];
}

async function createApproved(h: Harness, connection: { token: string; wabaId: string }, definition: Record<string, unknown> = ORDER_SHIPPED): Promise<string> {
  const created = await h.call('POST', `${V}/${connection.wabaId}/message_templates`, definition, connection.token);
  assert.equal(created.status, 200, JSON.stringify(created.body));
  await h.control('/template-status', { template_id: created.body.id, status: 'APPROVED' });
  return created.body.id as string;
}

describe('the sandbox provider: managing templates', () => {
  it('every new account has the approved hello_world sample, readable by id', async (t) => {
    const { connect, call } = await setup(t);
    const { token, wabaId } = await connect();
    const list = await call('GET', `${V}/${wabaId}/message_templates`, undefined, token);
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 1);
    const [hello] = list.body.data;
    assert.equal(hello.name, 'hello_world');
    assert.equal(hello.language, 'en_US');
    assert.equal(hello.status, 'APPROVED');
    assert.match(hello.id, /^\d+$/);
    assert.ok(hello.components.some((component: any) => component.type === 'BODY'));
    const one = await call('GET', `${V}/${hello.id}`, undefined, token);
    assert.deepEqual(one.body, hello);
    const narrowed = await call('GET', `${V}/${hello.id}?fields=name,status`, undefined, token);
    assert.deepEqual(Object.keys(narrowed.body).sort(), ['id', 'name', 'status']);
  });

  it('a valid definition is created PENDING and answers id, status and category', async (t) => {
    const { connect, call } = await setup(t);
    const { token, wabaId } = await connect();
    const created = await call('POST', `${V}/${wabaId}/message_templates`, ORDER_SHIPPED, token);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.deepEqual(Object.keys(created.body).sort(), ['category', 'id', 'status']);
    assert.equal(created.body.status, 'PENDING');
    assert.equal(created.body.category, 'UTILITY');
    const read = await call('GET', `${V}/${created.body.id}`, undefined, token);
    assert.equal(read.body.parameter_format, 'POSITIONAL');
    assert.equal(read.body.components[3].buttons[1].type, 'URL');
  });

  it('definitions the provider would refuse get code 100: name, language, category, components, variables, duplicates', async (t) => {
    const { connect, call } = await setup(t);
    const { token, wabaId } = await connect();
    const create = (changes: Record<string, unknown>) => call('POST', `${V}/${wabaId}/message_templates`, { ...ORDER_SHIPPED, ...changes }, token);
    const body = (text: string, example?: unknown) => ({ components: [{ type: 'BODY', text, ...(example === undefined ? {} : { example }) }] });
    const refusals: Record<string, unknown>[] = [
      { name: 'Order Shipped' },
      { name: undefined },
      { language: 'xx_XX' },
      { category: 'TRANSACTIONAL' },
      { components: [] },
      { components: [{ type: 'FOOTER', text: 'no body' }] },
      {
        components: [
          { type: 'BODY', text: 'a' },
          { type: 'BODY', text: 'b' },
        ],
      },
      {
        components: [
          { type: 'HEADER', format: 'GIF' },
          { type: 'BODY', text: 'x' },
        ],
      },
      {
        components: [
          { type: 'BODY', text: 'x' },
          { type: 'BUTTONS', buttons: [] },
        ],
      },
      body('Hi {{1}}'),
      body('Hi {{1}} and {{3}}', { body_text: [['a', 'b']] }),
      body('Hi {{first_name}}', { body_text: [['a']] }),
      body('x'.repeat(1025)),
      { parameter_format: 'NAMED', ...body('Hi {{first_name}}', { body_text_named_params: [{ param_name: 'other', example: 'x' }] }) },
    ];
    for (const changes of refusals) assertGraphError(await create(changes), 400, 100);

    assert.equal(
      (await create({ parameter_format: 'NAMED', ...body('Hi {{first_name}}', { body_text_named_params: [{ param_name: 'first_name', example: 'Ada' }] }) }))
        .status,
      200,
    );
    const otherLanguage = await create({ name: 'hello_world', language: 'en_GB' });
    assert.equal(otherLanguage.status, 200, 'another language of an existing name is a new template');
    const again = await create({ name: 'hello_world', language: 'en_US' });
    assertGraphError(again, 400, 100);
    assert.equal(again.body.error.error_subcode, 2388024);
  });

  it('lists filter by name, status, category and language, and page by cursors both ways', async (t) => {
    const { connect, call } = await setup(t);
    const { token, wabaId } = await connect();
    for (let index = 0; index < 5; index += 1) {
      const created = await call('POST', `${V}/${wabaId}/message_templates`, { ...ORDER_SHIPPED, name: `promo_${index}`, category: 'MARKETING' }, token);
      assert.equal(created.status, 200);
    }
    const list = (query: string) => call('GET', `${V}/${wabaId}/message_templates?${query}`, undefined, token);
    assert.deepEqual(
      (await list('name=promo_3')).body.data.map((template: any) => template.name),
      ['promo_3'],
    );
    assert.equal((await list('status=PENDING')).body.data.length, 5);
    assert.deepEqual(
      (await list('status=approved')).body.data.map((template: any) => template.name),
      ['hello_world'],
    );
    assert.equal((await list('category=MARKETING')).body.data.length, 5);
    assert.equal((await list('language=pt_BR')).body.data.length, 0);
    assertGraphError(await list('status=SHINY'), 400, 100);
    assertGraphError(await list('limit=0'), 400, 100);

    const first = await list('limit=2');
    assert.deepEqual(
      first.body.data.map((template: any) => template.name),
      ['promo_4', 'promo_3'],
    );
    assert.equal(typeof first.body.paging.cursors.before, 'string');
    assert.equal(first.body.paging.previous, undefined);
    const next = new URL(first.body.paging.next);
    assert.equal(next.searchParams.get('after'), first.body.paging.cursors.after);
    const second = await call('GET', next.toString(), undefined, token);
    assert.deepEqual(
      second.body.data.map((template: any) => template.name),
      ['promo_2', 'promo_1'],
    );
    const third = await call('GET', second.body.paging.next, undefined, token);
    assert.deepEqual(
      third.body.data.map((template: any) => template.name),
      ['promo_0', 'hello_world'],
    );
    assert.equal(third.body.paging.next, undefined);
    const back = await list(`limit=2&before=${third.body.paging.cursors.before}`);
    assert.deepEqual(
      back.body.data.map((template: any) => template.name),
      ['promo_2', 'promo_1'],
    );
  });

  it('deleting by name removes every language; by hsm_id only that one; an unknown name is refused', async (t) => {
    const { connect, call } = await setup(t);
    const { token, wabaId } = await connect();
    const english = await call('POST', `${V}/${wabaId}/message_templates`, ORDER_SHIPPED, token);
    await call('POST', `${V}/${wabaId}/message_templates`, { ...ORDER_SHIPPED, language: 'es' }, token);
    await call('POST', `${V}/${wabaId}/message_templates`, { ...ORDER_SHIPPED, language: 'fr' }, token);
    const names = async () =>
      (await call('GET', `${V}/${wabaId}/message_templates?name=order_shipped`, undefined, token)).body.data.map((t: any) => t.language).sort();

    assert.deepEqual((await call('DELETE', `${V}/${wabaId}/message_templates?name=order_shipped&hsm_id=${english.body.id}`, undefined, token)).body, {
      success: true,
    });
    assert.deepEqual(await names(), ['es', 'fr']);
    assert.deepEqual((await call('DELETE', `${V}/${wabaId}/message_templates?name=order_shipped`, undefined, token)).body, { success: true });
    assert.deepEqual(await names(), []);
    assertGraphError(await call('DELETE', `${V}/${wabaId}/message_templates?name=order_shipped`, undefined, token), 400, 100);
    assertGraphError(await call('DELETE', `${V}/${wabaId}/message_templates`, undefined, token), 400, 100);
  });

  it("another account's templates are out of reach", async (t) => {
    const { connect, call } = await setup(t);
    const owner = await connect();
    const stranger = await connect();
    const created = await call('POST', `${V}/${owner.wabaId}/message_templates`, ORDER_SHIPPED, owner.token);
    assertGraphError(await call('GET', `${V}/${created.body.id}`, undefined, stranger.token), 400, 100);
    assertGraphError(await call('GET', `${V}/${owner.wabaId}/message_templates`, undefined, stranger.token), 400, 100);
    assertGraphError(await call('POST', `${V}/${owner.wabaId}/message_templates`, ORDER_SHIPPED, stranger.token), 400, 100);
  });
});

describe('the sandbox provider: template review and status webhooks', () => {
  it('a status change from the control API updates the template and sends message_template_status_update', async (t) => {
    const { connect, call, control, receiver } = await setup(t);
    const { token, wabaId } = await connect();
    const created = await call('POST', `${V}/${wabaId}/message_templates`, ORDER_SHIPPED, token);
    const answer = await control('/template-status', {
      waba_id: wabaId,
      name: 'order_shipped',
      language: 'en_US',
      status: 'REJECTED',
      reason: 'INCORRECT_CATEGORY',
    });
    assert.equal(answer.status, 'REJECTED');
    assert.equal(answer.delivery.status, 200);
    assert.equal((await call('GET', `${V}/${created.body.id}`, undefined, token)).body.status, 'REJECTED');

    const [change] = changesOf(receiver.received, 'message_template_status_update');
    assert.equal(change!.entry.id, wabaId);
    assert.equal(typeof change!.entry.time, 'number');
    assert.equal(change!.value.event, 'REJECTED');
    assert.equal(change!.value.message_template_id, Number(created.body.id));
    assert.equal(change!.value.message_template_name, 'order_shipped');
    assert.equal(change!.value.message_template_language, 'en_US');
    assert.equal(change!.value.reason, 'INCORRECT_CATEGORY');
    assert.equal(change!.value.message_template_category, 'UTILITY');
    assert.ok(receiver.received.every((webhook) => webhook.signatureValid));
  });

  it('pausing adds other_info, disabling adds disable_info, FLAGGED notifies without changing the status', async (t) => {
    const h = await setup(t);
    const connection = await h.connect();
    const id = await createApproved(h, connection);
    await h.control('/template-status', { template_id: id, status: 'FLAGGED' });
    assert.equal((await h.call('GET', `${V}/${id}`, undefined, connection.token)).body.status, 'APPROVED');
    await h.control('/template-status', { template_id: id, status: 'PAUSED', reason: 'NONE' });
    await h.control('/template-status', { template_id: id, status: 'REINSTATED' });
    await h.control('/template-status', { template_id: id, status: 'DISABLED' });
    const values = changesOf(h.receiver.received, 'message_template_status_update').map((change) => change.value);
    assert.deepEqual(
      values.map((value) => value.event),
      ['APPROVED', 'FLAGGED', 'PAUSED', 'REINSTATED', 'DISABLED'],
    );
    assert.equal(values[2].other_info.title, 'FIRST_PAUSE');
    assert.equal(values[3].other_info.title, 'UNPAUSE');
    assert.equal(typeof values[4].disable_info.disable_date, 'number');
    assert.equal((await h.call('GET', `${V}/${id}`, undefined, connection.token)).body.status, 'DISABLED');
  });

  it('template_review approve makes the provider approve new templates after a step, with the webhook', async (t) => {
    const { connect, call, control, sandbox, receiver } = await setup(t);
    const { token, wabaId } = await connect();
    await control('/behaviour', { template_review: 'approve' });
    const created = await call('POST', `${V}/${wabaId}/message_templates`, ORDER_SHIPPED, token);
    assert.equal(created.body.status, 'PENDING');
    await sandbox.idle();
    assert.equal((await call('GET', `${V}/${created.body.id}`, undefined, token)).body.status, 'APPROVED');
    assert.equal(changesOf(receiver.received, 'message_template_status_update')[0]!.value.event, 'APPROVED');
    await control('/behaviour', { template_review: 'reject' });
    const rejected = await call('POST', `${V}/${wabaId}/message_templates`, { ...ORDER_SHIPPED, name: 'second' }, token);
    await sandbox.idle();
    assert.equal((await call('GET', `${V}/${rejected.body.id}`, undefined, token)).body.status, 'REJECTED');
  });

  it('the control API names templates by id or by account, name and language; unknown ones are 404', async (t) => {
    const { connect, call } = await setup(t);
    const { wabaId } = await connect();
    assert.equal((await call('POST', '/control/template-status', { template_id: '1', status: 'APPROVED' })).status, 404);
    assert.equal((await call('POST', '/control/template-status', { waba_id: wabaId, name: 'nope', language: 'en_US', status: 'APPROVED' })).status, 404);
    assert.equal((await call('POST', '/control/template-status', { name: 'hello_world', status: 'APPROVED' })).status, 400);
    assert.equal((await call('POST', '/control/template-status', { waba_id: wabaId, name: 'hello_world', language: 'en_US', status: 'SHINY' })).status, 400);
  });
});

describe('the sandbox provider: sending templates', () => {
  it('hello_world sends without parameters, outside the window, priced as a utility template', async (t) => {
    const { connect, send, sandbox, receiver } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const sent = await send(token, phoneNumberId, { type: 'template', template: { name: 'hello_world', language: { code: 'en_US' } } });
    assert.equal(sent.status, 200);
    await sandbox.idle();
    const [first] = statusesOf(receiver.received);
    assert.deepEqual(first!.pricing, { billable: true, pricing_model: 'PMP', type: 'regular', category: 'utility' });
  });

  it('an unknown name or language, or a template not yet approved, is 132001 with HTTP 404', async (t) => {
    const { connect, send, call } = await setup(t);
    const { token, phoneNumberId, wabaId } = await connect();
    const template = (name: string, code: string, components?: unknown[]) =>
      send(token, phoneNumberId, { type: 'template', template: { name, language: { code }, ...(components ? { components } : {}) } });
    assertGraphError(await template('no_such_template', 'en_US'), 404, 132001);
    assertGraphError(await template('hello_world', 'pt_BR'), 404, 132001);
    await call('POST', `${V}/${wabaId}/message_templates`, ORDER_SHIPPED, token);
    const pending = await template('order_shipped', 'en_US', shippedComponents(['A-1'], ['Ada', 'A-1']));
    assertGraphError(pending, 404, 132001);
    assert.match(pending.body.error.error_data.details, /PENDING/);
  });

  it('paused templates are 132015, disabled ones 132016', async (t) => {
    const h = await setup(t);
    const connection = await h.connect();
    const id = await createApproved(h, connection);
    const sendShipped = () =>
      h.send(connection.token, connection.phoneNumberId, {
        type: 'template',
        template: { name: 'order_shipped', language: { code: 'en_US' }, components: shippedComponents(['A-1'], ['Ada', 'A-1']) },
      });
    assert.equal((await sendShipped()).status, 200);
    await h.control('/template-status', { template_id: id, status: 'PAUSED' });
    assertGraphError(await sendShipped(), 400, 132015);
    await h.control('/template-status', { template_id: id, status: 'DISABLED' });
    assertGraphError(await sendShipped(), 400, 132016);
  });

  it('header and body need one parameter per variable: too few, too many or misplaced is 132000', async (t) => {
    const h = await setup(t);
    const connection = await h.connect();
    await createApproved(h, connection);
    const sendShipped = (components: unknown[]) =>
      h.send(connection.token, connection.phoneNumberId, { type: 'template', template: { name: 'order_shipped', language: { code: 'en_US' }, components } });
    assert.equal((await sendShipped(shippedComponents(['A-1'], ['Ada', 'A-1']))).status, 200);
    assertGraphError(await sendShipped(shippedComponents(['A-1'], ['Ada'])), 400, 132000);
    assertGraphError(await sendShipped(shippedComponents([], ['Ada', 'A-1'])), 400, 132000);
    assertGraphError(await sendShipped(shippedComponents(['A-1', 'extra'], ['Ada', 'A-1'])), 400, 132000);
    assertGraphError(await sendShipped([]), 400, 132000);
    const hello = await h.send(connection.token, connection.phoneNumberId, {
      type: 'template',
      template: { name: 'hello_world', language: { code: 'en_US' }, components: shippedComponents([], ['Ada']) },
    });
    assertGraphError(hello, 400, 132000);
  });

  it('named templates need each named parameter; media headers need a media parameter of their format', async (t) => {
    const h = await setup(t);
    const connection = await h.connect();
    await createApproved(h, connection, {
      name: 'welcome_named',
      language: 'en',
      category: 'MARKETING',
      parameter_format: 'NAMED',
      components: [
        { type: 'HEADER', format: 'IMAGE' },
        { type: 'BODY', text: 'Hello {{first_name}}!', example: { body_text_named_params: [{ param_name: 'first_name', example: 'Ada' }] } },
      ],
    });
    const sendWelcome = (header: unknown, body: unknown) =>
      h.send(connection.token, connection.phoneNumberId, {
        type: 'template',
        template: {
          name: 'welcome_named',
          language: { code: 'en' },
          components: [
            { type: 'header', parameters: [header] },
            { type: 'body', parameters: [body] },
          ],
        },
      });
    const image = { type: 'image', image: { link: 'https://example.test/a.png' } };
    const sent = await sendWelcome(image, { type: 'text', parameter_name: 'first_name', text: 'Ada' });
    assert.equal(sent.status, 200);
    assertGraphError(await sendWelcome(image, { type: 'text', parameter_name: 'last_name', text: 'Ada' }), 400, 132000);
    assertGraphError(await sendWelcome({ type: 'text', text: 'not an image' }, { type: 'text', parameter_name: 'first_name', text: 'Ada' }), 400, 132012);

    await h.sandbox.idle();
    const pricing = statusesOf(h.receiver.received).find((status) => status.id === sent.body.messages[0].id)!.pricing;
    assert.equal(pricing.category, 'marketing');
    assert.equal(pricing.type, 'regular');
  });
});

describe('the sandbox provider: templates are shared by every process on one store', () => {
  it('a template created and approved through one sandbox is listed and sendable through another', async (t) => {
    const store = await sandboxStore(t);
    const first = await setup(t, { store });
    const second = await setup(t, { store });
    const connection = await first.connect();
    const id = await createApproved(first, connection);

    const listed = await second.call('GET', `${V}/${connection.wabaId}/message_templates?name=order_shipped`, undefined, connection.token);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      listed.body.data.map((template: any) => [template.id, template.status]),
      [[id, 'APPROVED']],
    );
    assert.deepEqual(listed.body.data[0].components, (await first.call('GET', `${V}/${id}`, undefined, connection.token)).body.components);
    const sent = await second.send(connection.token, connection.phoneNumberId, {
      type: 'template',
      template: { name: 'order_shipped', language: { code: 'en_US' }, components: shippedComponents(['A-1'], ['Ada', 'A-1']) },
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
  });

  it('two sandboxes creating the same name and language at once make one template; the other gets 2388024', async (t) => {
    const store = await sandboxStore(t);
    const first = await setup(t, { store });
    const second = await setup(t, { store });
    const { token, wabaId } = await first.connect();
    const answers = await Promise.all([first, second].map((h) => h.call('POST', `${V}/${wabaId}/message_templates`, ORDER_SHIPPED, token)));
    const [created, refused] = answers[0]!.status === 200 ? answers : [answers[1]!, answers[0]!];
    assert.equal(created!.status, 200, JSON.stringify(answers.map((answer) => answer.body)));
    assertGraphError(refused!, 400, 100);
    assert.equal(refused!.body.error.error_subcode, 2388024);
    const listed = await second.call('GET', `${V}/${wabaId}/message_templates?name=order_shipped`, undefined, token);
    assert.deepEqual(
      listed.body.data.map((template: any) => template.id),
      [created!.body.id],
    );
  });
});
