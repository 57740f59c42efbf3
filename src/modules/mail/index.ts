/**
 * Mail: notices to people (an endpoint disabled, an invite). Every mail is recorded in `mails` and
 * sent by a queued job, so one written in a transaction leaves only if that transaction commits.
 */
import type { Db } from '../../db/connect.ts';
import { mailSend } from '../../jobs/catalog.ts';
import type { Queue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import type { MembersService } from '../members/index.ts';
import { handleJob, type Module } from '../module.ts';
import { createMailService, type MailService, type MailTransport } from './mail.service.ts';
import { createMailStore } from './mail.store.ts';

export function createMailModule(deps: {
  db: Db;
  clock: Clock;
  queue: Pick<Queue, 'enqueue'>;
  transport: MailTransport;
  members: Pick<MembersService, 'ownerEmails'>;
  from: string;
}): Module<MailService> {
  const service = createMailService({ ...deps, store: createMailStore() });
  return { name: 'mail', service, jobs: [handleJob(mailSend, (payload) => service.send(payload.mail_id))] };
}

export type { MailService } from './mail.service.ts';
export { createMailTransport } from './mail-transport.ts';
