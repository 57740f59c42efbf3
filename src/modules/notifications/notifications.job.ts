import { notificationExpire, notificationSend } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { NotificationsService } from './notifications.service.ts';

export function notificationsJobs(service: NotificationsService): JobRegistration[] {
  return [
    handleJob(notificationSend, (payload, context) => service.send(payload.notification_id, context)),
    handleJob(notificationExpire, (payload) => service.expireDue(payload)),
  ];
}
