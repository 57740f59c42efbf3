/** The API types the notifications pages use, from the server's schemas (types only: nothing of the server is bundled). */
export type {
  Notification,
  NotificationBatch,
  NotificationStatus,
  CreateNotificationInput,
  CreateBatchInput,
} from '../../../../src/modules/notifications/notifications.schemas.ts';
export type { Message } from '../../../../src/modules/messages/messages.schemas.ts';
