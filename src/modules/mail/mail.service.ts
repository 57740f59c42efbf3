import type { Db, Trx } from '../../db/connect.ts';
import { mailSend } from '../../jobs/catalog.ts';
import type { Queue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import type { MembersService } from '../members/index.ts';
import type { MailStore } from './mail.store.ts';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
}

/** Where mail leaves the service: SMTP in production, or a transport that only records it. */
export interface MailTransport {
  send(mail: OutgoingMail & { from: string }): Promise<{ messageId: string }>;
}

export interface MailServiceDeps {
  db: Db;
  store: MailStore;
  clock: Clock;
  queue: Pick<Queue, 'enqueue'>;
  transport: MailTransport;
  members: Pick<MembersService, 'ownerEmails'>;
  /** Seals a mail's text at rest: it may carry a secret link (an invite's token). */
  secrets: Pick<SecretBox, 'seal' | 'open'>;
  /** The sender of every mail. */
  from: string;
}

export function createMailService(deps: MailServiceDeps) {
  const { db, store, clock, queue, transport, members, secrets } = deps;
  const service = {
    /** Records a mail and queues its sending in the caller's transaction: it leaves only if the cause commits. */
    async queue(trx: Trx, mail: OutgoingMail & { organizationId: string | null }): Promise<string> {
      const now = clock.now();
      const id = newId('mail', now.getTime());
      await store.insert(trx, {
        id,
        organization_id: mail.organizationId,
        to_address: mail.to,
        subject: mail.subject,
        text: secrets.seal(mail.text),
        status: 'queued',
        transport_message_id: null,
        error: null,
        created_at: now.toISOString(),
        sent_at: null,
      });
      await queue.enqueue(trx, mailSend, { mail_id: id });
      return id;
    },

    async notifyOwners(trx: Trx, organizationId: string, message: { subject: string; text: string }): Promise<void> {
      for (const to of await members.ownerEmails(trx, organizationId)) await service.queue(trx, { ...message, to, organizationId });
    },

    /** A recorded mail, its text opened: what was (or will be) sent. */
    async find(id: string): Promise<(OutgoingMail & { id: string; status: string }) | undefined> {
      const mail = await store.find(db, id);
      return mail && { id: mail.id, to: mail.to_address, subject: mail.subject, text: secrets.open(mail.text), status: mail.status };
    },

    /** The mail job: sends once; a mail already sent is not sent again when the job is retried. */
    async send(mailId: string): Promise<void> {
      const mail = await store.find(db, mailId);
      if (!mail || mail.status === 'sent') return;
      try {
        const { messageId } = await transport.send({ from: deps.from, to: mail.to_address, subject: mail.subject, text: secrets.open(mail.text) });
        await store.update(db, mailId, { status: 'sent', transport_message_id: messageId, error: null, sent_at: clock.now().toISOString() });
      } catch (error) {
        await store.update(db, mailId, { error: error instanceof Error ? error.message : String(error) });
        throw error;
      }
    },
  };
  return service;
}

export type MailService = ReturnType<typeof createMailService>;
