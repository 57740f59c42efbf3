import Type, { type Static } from 'typebox';
import { Id, Metadata, Nullable, Timestamp } from '../../http/schemas.ts';

export const ContactSchema = Type.Object({
  id: Id('contact'),
  object: Type.Literal('contact'),
  phone_number: Type.String({ description: 'E.164, unique within the organization.' }),
  name: Nullable(Type.String()),
  profile_name: Nullable(Type.String({ description: 'The name the customer gave themselves, as the provider last reported it.' })),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Contact = Static<typeof ContactSchema>;
