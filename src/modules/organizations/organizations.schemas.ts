import Type, { type Static } from 'typebox';
import { Id, Metadata, MetadataPatch, Strict, Timestamp } from '../../http/schemas.ts';

export const OrganizationSettingsSchema = Type.Object({
  require_approval_for_risky_actions: Type.Boolean({
    description:
      'When true, a live automation may send a marketing template or call a connector only as the `action_step` of a `request_approval` step: a deploy of a version that does otherwise is refused.',
  }),
});

export const OrganizationSchema = Type.Object({
  id: Id('organization'),
  object: Type.Literal('organization'),
  name: Type.String(),
  settings: OrganizationSettingsSchema,
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Organization = Static<typeof OrganizationSchema>;

export const OrganizationName = Type.String({ minLength: 1, maxLength: 100 });

export const UpdateOrganizationBody = Strict({
  name: Type.Optional(OrganizationName),
  settings: Type.Optional(
    Strict({ require_approval_for_risky_actions: Type.Optional(OrganizationSettingsSchema.properties.require_approval_for_risky_actions) }),
  ),
  metadata: Type.Optional(MetadataPatch),
});
export type UpdateOrganizationInput = Static<typeof UpdateOrganizationBody>;
