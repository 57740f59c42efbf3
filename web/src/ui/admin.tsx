import * as Dialog from '@radix-ui/react-dialog';
import { useInfiniteQuery, type QueryKey } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { ApiError } from '../api/client.ts';
import type { ListPage } from '../api/types.ts';
import { useApi } from '../auth/SessionContext.tsx';
import styles from './admin.module.css';
import { Button, Empty, ErrorMessage, Loading } from './controls.tsx';

/** The frame of a settings page: its title, what it is for, and its main actions. */
export function AdminPage({ title, description, actions, children }: { title: string; description?: ReactNode; actions?: ReactNode; children: ReactNode }) {
  return (
    <div className={styles.page}>
      <header className={styles.header}>
        <div>
          <h1>{title}</h1>
          {description && <p className={styles.description}>{description}</p>}
        </div>
        {actions && <div className={styles.actions}>{actions}</div>}
      </header>
      {children}
    </div>
  );
}

export function Section({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  const id = `section-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section className={styles.section} aria-labelledby={id}>
      <div className={styles.header}>
        <h2 id={id}>{title}</h2>
        {actions && <div className={styles.actions}>{actions}</div>}
      </div>
      {children}
    </section>
  );
}

export function Badge({ tone, children }: { tone?: 'good' | 'bad' | 'warn'; children: ReactNode }) {
  return <span className={[styles.badge, tone ? styles[tone] : ''].join(' ')}>{children}</span>;
}

export const tableClass = styles.table;

/**
 * A list endpoint read page by page with the API's own cursors (`after` = the previous page's
 * `next_cursor`), newest first as the API answers: every list in the dashboard pages this way.
 */
export function useCursorList<T>(
  queryKey: QueryKey,
  path: string,
  query: Record<string, string | number | boolean | undefined> = {},
  options: { enabled?: boolean } = {},
) {
  const api = useApi();
  const result = useInfiniteQuery({
    queryKey,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam, signal }) => api.get<ListPage<T>>(path, { query: { limit: 25, ...query, after: pageParam }, signal }),
    getNextPageParam: (last) => (last.has_more && last.next_cursor ? last.next_cursor : undefined),
    enabled: options.enabled ?? true,
  });
  return { ...result, items: result.data?.pages.flatMap((page) => page.data) ?? [] };
}

/**
 * What a paged list shows around its rows: loading, the error as the API put it, the empty state
 * (which says what to do next), and a "Load more" that follows the cursor.
 */
export function PagedList<T>({ list, empty, children }: { list: ReturnType<typeof useCursorList<T>>; empty: ReactNode; children: (items: T[]) => ReactNode }) {
  if (list.isPending) return <Loading />;
  if (list.error) return <ErrorMessage error={list.error} />;
  if (list.items.length === 0) return <Empty>{empty}</Empty>;
  return (
    <>
      {children(list.items)}
      {list.hasNextPage && (
        <div className={styles.pager}>
          <Button onClick={() => void list.fetchNextPage()} disabled={list.isFetchingNextPage}>
            {list.isFetchingNextPage ? 'Loading…' : 'Load more'}
          </Button>
        </div>
      )}
    </>
  );
}

/** A modal dialog with a title, Radix's focus trap and Escape to close. */
export function Modal({ title, open, onOpenChange, children }: { title: string; open: boolean; onOpenChange: (open: boolean) => void; children: ReactNode }) {
  return (
    <Dialog.Root open={open} onOpenChange={onOpenChange}>
      <Dialog.Portal>
        <Dialog.Overlay className={styles.overlay} />
        <Dialog.Content className={styles.dialog} aria-describedby={undefined}>
          <Dialog.Title>{title}</Dialog.Title>
          {children}
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

export const dialogActionsClass = styles.dialogActions;

/** What a create form in a `CreateDialog` is given: how to give up, and where the created thing goes. */
export interface CreateFormProps<T> {
  onCancel: () => void;
  onCreated: (created: T) => void;
}

/**
 * A primary button that opens a dialog around a create form. The form is mounted only while the
 * dialog is open, so it starts empty every time; creating closes the dialog and hands the result on.
 */
export function CreateDialog<T>({
  label,
  title,
  onCreated,
  form: Form,
}: {
  label: string;
  title: string;
  onCreated: (created: T) => void;
  form: (props: CreateFormProps<T>) => ReactNode;
}) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button variant="primary" onClick={() => setOpen(true)}>
        {label}
      </Button>
      <Modal title={title} open={open} onOpenChange={setOpen}>
        {open && (
          <Form
            onCancel={() => setOpen(false)}
            onCreated={(created) => {
              setOpen(false);
              onCreated(created);
            }}
          />
        )}
      </Modal>
    </>
  );
}

/**
 * A destructive action behind a confirmation that says exactly what will happen. The action's
 * error (the API's message) is shown in the dialog, which stays open so the member can read it.
 */
export function ConfirmButton({
  label,
  title,
  consequence,
  confirmLabel,
  onConfirm,
  disabled,
}: {
  /** The button that opens the dialog (its accessible name). */
  label: string;
  title: string;
  /** What the action will do, in plain words. */
  consequence: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  disabled?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const confirm = async () => {
    setPending(true);
    setError(null);
    try {
      await onConfirm();
      setOpen(false);
    } catch (failure) {
      setError(failure);
    } finally {
      setPending(false);
    }
  };
  return (
    <>
      <Button variant="danger" onClick={() => setOpen(true)} disabled={disabled}>
        {label}
      </Button>
      <Modal title={title} open={open} onOpenChange={(next) => !pending && setOpen(next)}>
        <p>{consequence}</p>
        <ErrorMessage error={error} />
        <div className={styles.dialogActions}>
          <Button onClick={() => setOpen(false)} disabled={pending}>
            Cancel
          </Button>
          <Button variant="primary" onClick={() => void confirm()} disabled={pending}>
            {pending ? 'Working…' : confirmLabel}
          </Button>
        </div>
      </Modal>
    </>
  );
}

/** A copy-to-clipboard button that says when it worked. */
export function CopyButton({ value, label = 'Copy' }: { value: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setState('copied');
    } catch {
      // No clipboard (an insecure origin, a denied permission): the value stays on screen to select.
      setState('failed');
    }
    setTimeout(() => setState('idle'), 2_000);
  };
  return (
    <Button onClick={() => void copy()} aria-live="polite">
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Select and copy it by hand' : label}
    </Button>
  );
}

/**
 * A secret the API shows once (an API key, a webhook signing secret): shown with a copy button and
 * the warning that it cannot be shown again.
 */
export function SecretOnce({ label, value }: { label: string; value: string }) {
  return (
    <div role="group" aria-label={label}>
      <p>
        <strong>{label}</strong>: copy it now. It is shown only once; the service keeps no readable copy.
      </p>
      <div className={styles.secret}>
        <code data-testid="secret-value">{value}</code>
        <CopyButton value={value} />
      </div>
    </div>
  );
}

/** An API error's code, if it is one: for pages that react to a specific refusal. */
export function errorCode(error: unknown): string | undefined {
  return error instanceof ApiError ? error.code : undefined;
}
