import Type, { type Static } from 'typebox';
import { Id, Metadata, Timestamp } from '../../http/schemas.ts';

export const OrganizationSchema = Type.Object({
  id: Id('organization'),
  object: Type.Literal('organization'),
  name: Type.String(),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Organization = Static<typeof OrganizationSchema>;

export const OrganizationName = Type.String({ minLength: 1, maxLength: 100 });
