import type { Transporter } from 'nodemailer';
import type { MailTransport } from './mail.service.ts';

/**
 * SMTP when `SMTP_URL` is set. Otherwise nodemailer's JSON transport, which builds the message but
 * sends nothing: the mail stays recorded in the `mails` table and is written to the log, so the
 * embedded setup needs no mail server and nothing is silently lost. nodemailer is loaded with the
 * first mail: mail is rare (a disabled endpoint's notice), only a worker sends it, and the library
 * is ~20 MiB resident in every process that merely imports it.
 */
export function createMailTransport(options: { smtpUrl: string | undefined; log: (mail: object) => void }): MailTransport {
  let transporter: Promise<Transporter> | undefined;
  const open = async (): Promise<Transporter> => {
    const { default: nodemailer } = await import('nodemailer');
    return options.smtpUrl ? nodemailer.createTransport(options.smtpUrl) : nodemailer.createTransport({ jsonTransport: true });
  };
  return {
    async send(mail) {
      // A failed load or a transport that could not be made is tried again with the next mail (the job's retry).
      transporter ??= open().catch((error: unknown) => {
        transporter = undefined;
        throw error;
      });
      const info = await (await transporter).sendMail(mail);
      if (!options.smtpUrl) options.log({ mail: { to: mail.to, subject: mail.subject, text: mail.text }, message_id: info.messageId });
      return { messageId: info.messageId };
    },
  };
}
