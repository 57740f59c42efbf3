import assert from 'node:assert/strict';
import { test } from 'node:test';
import { summarize } from '../bench/perf-profile.ts';

// Four samples as `perf script -F ip,sym` prints them after `perf inject --jit`: innermost frame first.
const SCRIPT = `
	ffffffff8225fd19 pvm_irq_enable
	ffffffff81750d8b tcp_sendmsg
	          10a0b1 __GI___libc_write
	          2b1c00 node::StreamBase::WriteString<(node::encoding)1>
	             1f3 JS:*'handleWriteReq node:internal/stream_base_commons:46:24
	             6f2 JS:*'onSendEnd ${process.cwd()}/node_modules/fastify/lib/reply.js:599:20

	          3c2a10 v8::internal::String::WriteToFlat2<unsigned char>
	             332 Builtin:GetPropertyWithReceiver
	             40c JS:*' file://${process.cwd()}/src/http/rate-limit.ts:318:28
	             6f2 JS:*'onSendEnd ${process.cwd()}/node_modules/fastify/lib/reply.js:599:20

	             845 JS:*'anonymous9 :845:27
	             40c JS:*' file://${process.cwd()}/src/http/rate-limit.ts:318:28

	          1b0c20 llhttp__internal__run
	          1b2f00 node::http_parser::Parser::Execute
	          0a1b00 uv__read
`;

test('charges kernel time to its system call, native code to the JavaScript that called it', () => {
  const summary = summarize(SCRIPT);
  assert.equal(summary.samples, 4);
  assert.deepEqual(Object.fromEntries(summary.parts), {
    'kernel: write': 1,
    'src/http/rate-limit.ts': 1,
    'generated (serializers, validators)': 1,
    'native: HTTP parser': 1,
  });
  assert.equal(summary.functions.get('(anonymous) src/http/rate-limit.ts:318:28'), 1);
  assert.equal(summary.functions.get('anonymous9 :845:27'), 1);
});

test('names a library by its package, not by the file inside it', () => {
  const summary = summarize(`
	             6f2 JS:*'onSendEnd ${process.cwd()}/node_modules/fastify/lib/reply.js:599:20
`);
  assert.deepEqual([...summary.parts.keys()], ['fastify']);
});

test('shows SQLite on its own, whichever JavaScript called it', () => {
  const summary = summarize(`
	          4a1b00 pthread_mutex_lock@@GLIBC_2.2.5
	          6c2d00 node::sqlite::StatementExecutionHelper::ColumnToValue
	          6c3e00 node::sqlite::StatementSync::All
	             40c JS:*'all file://${process.cwd()}/src/db/sqlite.ts:59:6
`);
  assert.deepEqual([...summary.parts.keys()], ['native: SQLite (node:sqlite)']);
});
