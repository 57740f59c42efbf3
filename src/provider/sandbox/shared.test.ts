/**
 * The sandbox's world is in the store, so two sandboxes on one store (two processes serving it, or
 * one process before and after a restart) are one provider: what one created, the other knows, and
 * every one-shot or counted rule holds across them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { APP_SECRET, assertGraphError, sandboxStore, setup, USER, V } from './harness.test.ts';

/** Two sandboxes on one store, each on its own port, as two processes would serve it. */
async function twoSandboxes(t: Parameters<typeof setup>[0], options: Parameters<typeof setup>[1] = {}) {
  const store = await sandboxStore(t);
  return [await setup(t, { ...options, store }), await setup(t, { ...options, store })] as const;
}

describe('the sandbox provider: one world for every process on a store', () => {
  it('a sandbox started again on the store knows the numbers, tokens and open windows of the one before', async (t) => {
    const store = await sandboxStore(t);
    const before = await setup(t, { store, autoStatus: false });
    const connection = await before.connect();
    assert.equal((await before.inbound({ phone_number_id: connection.phoneNumberId, type: 'text', text: 'hi' })).status, 200);
    before.sandbox.close();

    const after = await setup(t, { store, autoStatus: false });
    const numbers = (await after.call('GET', '/control/numbers')).body.data;
    assert.deepEqual(
      numbers.map((number: { phone_number_id: string; subscribed: boolean }) => [number.phone_number_id, number.subscribed]),
      [[connection.phoneNumberId, true]],
    );
    const sent = await after.sendText(connection.token, connection.phoneNumberId);
    assert.equal(sent.status, 200, 'the token still works and the window the user opened is still open');
    assert.equal((await after.sandbox.state.findMessage(sent.body.messages[0].id))?.waId, USER);
  });

  it('fail_next set through one sandbox fails exactly one call, whichever sandbox takes it', async (t) => {
    const [first, second] = await twoSandboxes(t, { autoStatus: false });
    const connection = await first.connect();
    await first.inbound({ phone_number_id: connection.phoneNumberId, type: 'text', text: 'hi' });
    await first.control('/behaviour', { fail_next: { code: 131000 } });
    // Many at once, so that several read the behaviour while the failure is still set.
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, index) => (index % 2 === 0 ? first : second).sendText(connection.token, connection.phoneNumberId)),
    );
    assert.deepEqual(
      answers.map((answer) => answer.status).filter((status) => status !== 200),
      [500],
    );
    assert.equal((await second.call('GET', '/control/behaviour')).body.fail_next, null);

    // What decides it: taking the failure is conditional on its still being the one set.
    await second.control('/behaviour', { fail_next: { code: 131000 } });
    const seen = (await first.sandbox.state.behaviour()).failNext!;
    assert.equal(await first.sandbox.state.take('failNext', seen), true);
    assert.equal(await second.sandbox.state.take('failNext', seen), false, 'the second taker finds it gone');
  });

  it('a throttle of three calls refuses three calls in all, across both sandboxes', async (t) => {
    const [first, second] = await twoSandboxes(t, { autoStatus: false });
    const connection = await first.connect();
    await second.control('/behaviour', { throttle: { calls: 3 } });
    const answers = await Promise.all(
      [first, second, first, second, first, second].map((sandbox) =>
        sandbox.call('GET', `${V}/${connection.wabaId}/message_templates`, undefined, connection.token),
      ),
    );
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 200, 200, 400, 400, 400]);
    for (const refused of answers.filter((answer) => answer.status === 400)) assertGraphError(refused, 400, 80007);
    assert.equal((await first.call('GET', '/control/behaviour')).body.throttle, null);
  });

  it('a re-authorisation code exchanged through both sandboxes at once issues one token', async (t) => {
    const [first, second] = await twoSandboxes(t);
    const connection = await first.connect();
    const { code } = await second.control(`/numbers/${connection.phoneNumberId}/code`);
    const exchange = `${V}/oauth/access_token?client_id=app&client_secret=${APP_SECRET}&code=${code}`;
    const answers = await Promise.all([first.call('GET', exchange), second.call('GET', exchange)]);
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 400]);
    const refused = answers.find((answer) => answer.status === 400)!;
    assertGraphError(refused, 400, 100);
    assert.equal(refused.body.error.error_subcode, 36009);
    const issued = answers.find((answer) => answer.status === 200)!;
    assert.equal(issued.body.sandbox.phone_number_id, connection.phoneNumberId);
  });

  it("a number's sends per second are counted across both sandboxes", async (t) => {
    const [first, second] = await twoSandboxes(t, { autoStatus: false });
    const connection = await first.connect();
    await first.inbound({ phone_number_id: connection.phoneNumberId, type: 'text', text: 'hi' });
    await second.control('/behaviour', { throughput_mps: 2 });
    // Both harnesses' clocks stand at the same instant: one second for all five sends.
    const statuses: number[] = [];
    for (const sandbox of [first, second, first, second, first]) statuses.push((await sandbox.sendText(connection.token, connection.phoneNumberId)).status);
    assert.deepEqual(statuses, [200, 200, 400, 400, 400]);
  });
});
