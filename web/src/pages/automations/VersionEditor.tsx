import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { ApiError } from '../../api/client.ts';
import { useApi } from '../../auth/SessionContext.tsx';
import { Section } from '../../ui/admin.tsx';
import { Button, ErrorMessage, Loading, Notice, TextField } from '../../ui/controls.tsx';
import { automationKeys, type Automation, type AutomationVersion } from './api.ts';
import { DiffView } from './DiffView.tsx';
import { JsonField, parseJson, prettyJson, Problems } from './JsonField.tsx';
import { useVersion } from './versions.ts';
import styles from './automations.module.css';

const EMPTY = `{
  "trigger": { "type": "api" },
  "start": "done",
  "steps": [{ "id": "done", "type": "end" }]
}`;

/** The version another writer saved since the editor opened: the API names it in a stale refusal. */
function staleLatest(error: unknown): number | null {
  if (!(error instanceof ApiError) || error.code !== 'invalid_state' || error.body.param !== '/based_on_version') return null;
  return typeof error.body.latest_version === 'number' ? error.body.latest_version : null;
}

/** Loads the version to start from, then edits it. */
export function VersionEditor({ automation, from, onClose }: { automation: Automation; from: number; onClose: () => void }) {
  const start = useVersion(automation.id, from);
  if (from > 0 && !start.data) {
    return <Section title="New version">{start.error ? <ErrorMessage error={start.error} /> : <Loading />}</Section>;
  }
  return (
    <Editor
      key={from}
      automation={automation}
      from={from}
      initial={start.data ? prettyJson(start.data.definition) : EMPTY}
      basedOn={automation.latest_version}
      onClose={onClose}
    />
  );
}

/**
 * The next version: written on top of the latest version as read when the editor opened
 * (`based_on_version`). If someone wrote another meanwhile, the API refuses (409): the draft is kept,
 * and the editor shows what saving it would change from that newer version before saving on top of it.
 */
function Editor({
  automation,
  from,
  initial,
  basedOn: initialBase,
  onClose,
}: {
  automation: Automation;
  from: number;
  initial: string;
  basedOn: number;
  onClose: () => void;
}) {
  const api = useApi();
  const queryClient = useQueryClient();
  const [text, setText] = useState(initial);
  const [message, setMessage] = useState('');
  const [basedOn, setBasedOn] = useState(initialBase);
  const save = useMutation({
    mutationFn: (body: { definition: unknown; based_on_version: number }) =>
      api.post<AutomationVersion>(`/v1/automations/${automation.id}/versions`, { ...body, ...(message ? { message } : {}) }),
    onSuccess: async () => {
      onClose();
      await queryClient.invalidateQueries({ queryKey: automationKeys.all });
    },
  });
  const parsed = parseJson(text);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (parsed.ok) save.mutate({ definition: parsed.value, based_on_version: basedOn });
  };
  const newer = staleLatest(save.error);
  return (
    <Section title="New version">
      <form className={styles.form} onSubmit={submit}>
        <p className={styles.muted}>
          {from > 0 ? `Starting from version ${from}. ` : ''}Saving writes version {basedOn + 1}; deploy it to make new runs use it.
        </p>
        <JsonField label="Definition" value={text} onChange={setText} rows={18} />
        <TextField label="Version message" maxLength={500} placeholder="What changed" value={message} onChange={(e) => setMessage(e.target.value)} />
        {newer !== null ? (
          <StaleNotice
            automationId={automation.id}
            newer={newer}
            draft={parsed.ok ? parsed.value : null}
            onRebase={() => {
              setBasedOn(newer);
              save.reset();
            }}
          />
        ) : (
          <>
            <ErrorMessage error={save.error} />
            <Problems error={save.error} />
          </>
        )}
        <div className={styles.formActions}>
          <Button onClick={onClose} disabled={save.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="primary" disabled={save.isPending || !parsed.ok || newer !== null}>
            {save.isPending ? 'Saving…' : `Save version ${basedOn + 1}`}
          </Button>
        </div>
      </form>
    </Section>
  );
}

/** Another version was written since the editor opened: what the draft would change from it, and the choice to save on top. */
function StaleNotice({ automationId, newer, draft, onRebase }: { automationId: string; newer: number; draft: unknown; onRebase: () => void }) {
  const latest = useVersion(automationId, newer);
  return (
    <div className={styles.stale} role="alert">
      <Notice>
        Someone wrote version {newer} after you opened this editor, so nothing was saved: the API refuses a version based on an older one, so that no edit is
        lost without anyone seeing it. Your draft is kept. Below is what saving it would change from version {newer}; lines marked − are in version {newer} and
        would be gone. Copy in what you want to keep, then save on top of version {newer}.
      </Notice>
      {latest.data ? (
        draft !== null && <DiffView before={latest.data.definition} after={draft} label={`Your draft compared with version ${newer}`} />
      ) : latest.error ? (
        <ErrorMessage error={latest.error} />
      ) : (
        <Loading />
      )}
      <Button onClick={onRebase}>Save on top of version {newer}…</Button>
    </div>
  );
}
