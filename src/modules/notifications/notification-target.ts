/**
 * What a schedule's occurrence creates when its target is notifications: the schema a schedule
 * stores, and the two calls the schedules module makes on the notifications module (checking a
 * target when a schedule is written, creating its notifications when an occurrence fires).
 */
import type { Trx } from '../../db/connect.ts';
import type { Principal } from '../credentials/principal.ts';
import type { NotificationTarget } from './notification-target.schemas.ts';

// The schema lives in a schema file of its own (schemas-stand-alone); re-exported for the callers of this contract.
export { MAX_RECIPIENTS, NotificationTargetSchema, PhoneNumber, type NotificationTarget } from './notification-target.schemas.ts';

/** What an occurrence created: one notification for one recipient, a batch for several. */
export type NotificationTargetResult = { notification_id: string } | { batch_id: string };

export interface NotificationTargets {
  /**
   * Checks a target as a send would (connection, approved template, parameters, recipients), reading
   * only; every refusal names its field under `param` (`/target`). Answers the target as stored: the
   * connection filled in from a connection key.
   */
  checkTarget(principal: Principal, target: NotificationTarget, param: string): Promise<NotificationTarget>;
  /**
   * Creates the occurrence's notifications in the fire job's transaction, due at `sendAt`, each
   * carrying `schedule_id` and `occurrence_id`. A recipient that can no longer be sent to (a contact
   * deleted or opted out of marketing) is an error of the batch, not of the occurrence; a target that
   * cannot be sent at all (the template paused, the connection gone) throws an AppError, which the
   * occurrence records as its failure. Creating twice for one occurrence answers the first result.
   */
  createForOccurrence(
    trx: Trx,
    input: { organizationId: string; scheduleId: string; occurrenceId: string; target: NotificationTarget; sendAt: Date },
  ): Promise<NotificationTargetResult>;
}
