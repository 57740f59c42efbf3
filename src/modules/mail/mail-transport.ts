import nodemailer from 'nodemailer';
import type { MailTransport } from './mail.service.ts';

/**
 * SMTP when `SMTP_URL` is set. Otherwise nodemailer's JSON transport, which builds the message but
 * sends nothing: the mail stays recorded in the `mails` table and is written to the log, so the
 * embedded setup needs no mail server and nothing is silently lost.
 */
export function createMailTransport(options: { smtpUrl: string | undefined; log: (mail: object) => void }): MailTransport {
  const transporter = options.smtpUrl ? nodemailer.createTransport(options.smtpUrl) : nodemailer.createTransport({ jsonTransport: true });
  return {
    async send(mail) {
      const info = await transporter.sendMail(mail);
      if (!options.smtpUrl) options.log({ mail: { to: mail.to, subject: mail.subject, text: mail.text }, message_id: info.messageId });
      return { messageId: info.messageId };
    },
  };
}
