/**
 * The notification target a schedule stores, as a schema: a file of its own so that the schedule's
 * schemas (and the dashboard that bundles them) can use it without the server (schemas-stand-alone).
 * The calls schedules make on notifications are in notification-target.ts.
 */
import Type, { type Static } from 'typebox';
import { Id, Metadata, Strict } from '../../http/schemas.ts';
import { TemplateParametersSchema, TemplateReferenceProperties } from '../templates/templates.schemas.ts';

export const MAX_RECIPIENTS = 1000;

export const PhoneNumber = Type.String({ pattern: '^\\+[1-9][0-9]{6,14}$', description: 'A number in E.164.' });

export const NotificationTargetSchema = Strict(
  {
    type: Type.Literal('notification'),
    connection_id: Type.Optional(Id('connection', 'The sending number; required unless a connection key writes the schedule.')),
    template: Strict(TemplateReferenceProperties, { description: 'Exactly one of `id`, or `name` with `language`: an approved template.' }),
    to: Type.Optional(
      Type.Array(PhoneNumber, { minItems: 1, maxItems: MAX_RECIPIENTS, description: 'Recipients by number. Exactly one of `to` and `contact_ids`.' }),
    ),
    contact_ids: Type.Optional(Type.Array(Id('contact'), { minItems: 1, maxItems: MAX_RECIPIENTS, description: 'Recipients by contact.' })),
    parameters: Type.Optional(TemplateParametersSchema),
    metadata: Type.Optional(Metadata),
  },
  { description: 'Each occurrence sends this template to these recipients as notifications (one, or a batch for several).' },
);
export type NotificationTarget = Static<typeof NotificationTargetSchema>;
