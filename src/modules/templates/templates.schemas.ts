import Type, { type Static } from 'typebox';
import { Id, Nullable, Timestamp } from '../../http/schemas.ts';
import { TEMPLATE_CATEGORIES, TEMPLATE_STATUSES } from '../../provider/provider.ts';

export const TemplateSchema = Type.Object({
  id: Id('template'),
  object: Type.Literal('template'),
  connection_id: Id('connection'),
  name: Type.String(),
  language: Type.String({ description: '`en_US`, `pt_BR`, ...: a name exists once per language.' }),
  category: Nullable(Type.Enum(TEMPLATE_CATEGORIES)),
  status: Type.Enum(TEMPLATE_STATUSES, { description: 'As the provider reviews it; only `approved` templates can be sent.' }),
  status_reason: Nullable(Type.String({ description: "The provider's reason for the last status change (a rejection, a pause)." })),
  parameter_format: Type.Enum(['positional', 'named'] as const),
  components: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'Header, body, footer and buttons, as the provider defines them.' }),
  provider_template_id: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Template = Static<typeof TemplateSchema>;
