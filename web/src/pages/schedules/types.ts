/** The API types the schedules pages use, from the server's schemas (types only: nothing of the server is bundled). */
export type {
  Schedule,
  ScheduleOccurrence,
  ScheduleRecurrence,
  ScheduleStatus,
  OccurrenceStatus,
  CreateScheduleInput,
  UpdateScheduleInput,
  ScheduleTarget,
} from '../../../../src/modules/schedules/schedules.schemas.ts';
export type { NotificationTarget } from '../../../../src/modules/notifications/notification-target.schemas.ts';
