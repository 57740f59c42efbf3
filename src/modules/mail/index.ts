/**
 * Mail: notices to people (an endpoint disabled, an invite). Every mail is recorded in `mails` and
 * sent by a queued job, so one written in a transaction leaves only if that transaction commits.
 */
import { mailSend } from '../../jobs/catalog.ts';
import { handleJob, type Module } from '../module.ts';
import { createMailService, type MailService, type MailServiceDeps } from './mail.service.ts';
import { createMailStore } from './mail.store.ts';

export function createMailModule(deps: Omit<MailServiceDeps, 'store'>): Module<MailService> {
  const service = createMailService({ ...deps, store: createMailStore() });
  return { name: 'mail', service, jobs: [handleJob(mailSend, (payload) => service.send(payload.mail_id))] };
}

export type { MailService } from './mail.service.ts';
export { createMailTransport } from './mail-transport.ts';
