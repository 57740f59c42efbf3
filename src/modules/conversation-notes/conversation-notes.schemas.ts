import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Metadata, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { CREDENTIAL_KINDS } from '../credentials/scopes.schemas.ts';

export const NoteSchema = Type.Object({
  id: Id('note'),
  object: Type.Literal('note'),
  conversation_id: Id('conversation'),
  author: Type.Object(
    {
      member_id: Nullable(Id('member'), { description: 'The member who wrote it with a dashboard token; null for API keys and OAuth tokens.' }),
      credential_kind: Type.Enum(CREDENTIAL_KINDS),
    },
    { description: 'Who wrote the note.' },
  ),
  body: Type.String({ description: 'The text, for your team only: never sent to the customer.' }),
  metadata: Metadata,
  created_at: Timestamp,
});
export type Note = Static<typeof NoteSchema>;

export const CreateNoteBody = Strict({
  body: Type.String({ minLength: 1, maxLength: 4000 }),
  metadata: Type.Optional(Metadata),
});
export type CreateNoteInput = Static<typeof CreateNoteBody>;

export const NoteListQuery = ListQuery();
export const NoteListSchema = ListOf(NoteSchema);
