import { useQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { ErrorMessage } from '../../ui/controls.tsx';
import styles from './compose/compose.module.css';
import { useConversationWrite } from './compose/conversation-writes.ts';
import { AssigneeSection, LockSection, NotesSection, Section, TagsSection } from './compose/DetailsSections.tsx';
import type { Contact, ConversationControl, ConversationState } from './compose/types.ts';
import type { Conversation } from './inbox-types.ts';

/** Who answers the customer now, in one line each (docs/conversations.md#control). */
const CONTROLS: Record<ConversationControl, { label: string; explanation: string }> = {
  api: { label: 'Integration (API)', explanation: 'Your integration answers through the API; people in the inbox stand back.' },
  automation: { label: 'Automation', explanation: 'An automation of the service answers; it acts only on conversations it controls.' },
  agent: { label: 'Agent', explanation: 'A person answers from the inbox; bots and integrations should stand back.' },
  app: { label: 'Business app', explanation: "The number's owner answers from the business messaging app on their phone." },
};

const STATES: Record<ConversationState, string> = { open: 'Open', pending: 'Pending', closed: 'Closed' };

/** The conversation's side panel: assignee, control, state, tags, internal notes, the lock. */
export function DetailsPanel({ conversation }: { conversation: Conversation }) {
  return (
    <aside className={styles.panel} aria-label="Conversation details">
      <ContactSection conversation={conversation} />
      <StateSection conversation={conversation} />
      <AssigneeSection conversation={conversation} />
      <ControlSection conversation={conversation} />
      <TagsSection conversation={conversation} />
      <LockSection conversation={conversation} />
      <NotesSection conversation={conversation} />
    </aside>
  );
}

function ContactSection({ conversation }: { conversation: Conversation }) {
  const api = useApi();
  // The conversation may have been read with its contact expanded; otherwise it is read once here.
  const contact = useQuery({
    queryKey: ['contact', conversation.contact_id],
    queryFn: () => api.get<Contact>(`/v1/contacts/${conversation.contact_id}`),
    enabled: !conversation.contact,
    staleTime: 5 * 60_000,
  });
  const shown = conversation.contact ?? contact.data;
  return (
    <Section title="Contact">
      {shown ? (
        <dl className={styles.facts}>
          <dt>Name</dt>
          <dd>{shown.name ?? shown.profile_name ?? 'No name given'}</dd>
          <dt>Number</dt>
          <dd>{shown.phone_number}</dd>
        </dl>
      ) : conversation.contact === null ? (
        <p className={styles.muted}>The contact was deleted.</p>
      ) : (
        <ErrorMessage error={contact.error} />
      )}
    </Section>
  );
}

function StateSection({ conversation }: { conversation: Conversation }) {
  const api = useApi();
  const { converse } = usePermissions();
  const id = useId();
  const update = useConversationWrite(conversation, (state: ConversationState) => api.patch<Conversation>(`/v1/conversations/${conversation.id}`, { state }));
  return (
    <section className={styles.section}>
      {converse ? (
        <div className={styles.field}>
          <label htmlFor={id} className={styles.sectionTitle}>
            State
          </label>
          <select
            id={id}
            className={styles.select}
            value={conversation.state}
            disabled={update.isPending}
            onChange={(event) => update.mutate(event.target.value as ConversationState)}
          >
            {Object.entries(STATES).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </div>
      ) : (
        <p>
          <span className={styles.sectionTitle}>State</span> {STATES[conversation.state]}
        </p>
      )}
      <ErrorMessage error={update.error} />
    </section>
  );
}

function ControlSection({ conversation }: { conversation: Conversation }) {
  const api = useApi();
  const { converse } = usePermissions();
  const id = useId();
  const update = useConversationWrite(conversation, (control: ConversationControl) =>
    api.post<Conversation>(`/v1/conversations/${conversation.id}/control`, { control }),
  );
  const current = CONTROLS[conversation.control];
  return (
    <section className={styles.section}>
      {converse ? (
        <div className={styles.field}>
          <label htmlFor={id} className={styles.sectionTitle}>
            Who answers
          </label>
          <select
            id={id}
            className={styles.select}
            value={conversation.control}
            disabled={update.isPending}
            aria-describedby={`${id}-explained`}
            onChange={(event) => update.mutate(event.target.value as ConversationControl)}
          >
            {Object.entries(CONTROLS).map(([value, { label }]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </div>
      ) : (
        <p>
          <span className={styles.sectionTitle}>Who answers</span> {current.label}
        </p>
      )}
      <p id={`${id}-explained`} className={styles.muted}>
        {current.explanation}
      </p>
      <ErrorMessage error={update.error} />
    </section>
  );
}
