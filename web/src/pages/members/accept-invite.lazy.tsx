import { useMutation, useQuery } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import { useState, type FormEvent, type ReactNode } from 'react';
import { ApiError, type ApiClient } from '../../api/client.ts';
import type { DashboardToken } from '../../api/types.ts';
import { useSession, useSessionState } from '../../auth/SessionContext.tsx';
import { Button, ErrorMessage, errorFor, Loading, TextField } from '../../ui/controls.tsx';
import styles from '../auth/auth.module.css';
import local from './members.module.css';
import { article } from './roles.ts';

/**
 * The mail's link carries the token in the fragment (`#token=…`), which never reaches a server or a
 * log; `?token=` is read too, for a link typed by hand.
 */
function tokenOfLink(search: string | undefined): string | undefined {
  return new URLSearchParams(window.location.hash.slice(1)).get('token') ?? search;
}

type Invitee = { kind: 'new' } | { kind: 'existing' } | { kind: 'refused'; error: unknown } | { kind: 'accepted'; token: DashboardToken };

/**
 * Who the invitation is for, as the API tells it: accepting without a password or a credential is
 * refused with `validation_failed` on `/password` when the invited email has no account yet, and
 * with `credential_missing` when it has one; a link that no longer works says why. Nothing changes
 * on such a refusal. (The API has no read of an invite by its token: see docs/dashboard.md.)
 */
async function invitee(api: ApiClient, token: string): Promise<Invitee> {
  try {
    return { kind: 'accepted', token: await api.post<DashboardToken>('/v1/invites/accept', { token }, { anonymous: true }) };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.code === 'validation_failed' && error.body.param === '/password') return { kind: 'new' };
    if (error.code === 'credential_missing') return { kind: 'existing' };
    return { kind: 'refused', error };
  }
}

function AcceptInvitePage() {
  const search = Route.useSearch();
  const [token] = useState(() => tokenOfLink(search.token));
  const session = useSession();
  const [accepted, setAccepted] = useState<DashboardToken | null>(null);
  const probe = useQuery({
    queryKey: ['invitee', token],
    queryFn: () => invitee(session.api, token!),
    enabled: token !== undefined,
    retry: false,
    staleTime: Infinity,
  });
  const found = accepted ? ({ kind: 'accepted', token: accepted } as const) : probe.data;
  let body: ReactNode;
  if (token === undefined) body = <p>This link carries no invitation. Open the link from the invitation mail again, whole.</p>;
  else if (probe.isPending) body = <Loading label="Reading the invitation…" />;
  else if (probe.error) body = <ErrorMessage error={probe.error} />;
  else if (found?.kind === 'accepted') body = <Joined token={found.token} />;
  else if (found?.kind === 'new') body = <NewAccount token={token} onAccepted={setAccepted} />;
  else if (found?.kind === 'existing') body = <ExistingAccount token={token} onAccepted={setAccepted} />;
  else if (found?.kind === 'refused')
    body = (
      <>
        <ErrorMessage error={found.error} />
        <p>
          Ask an owner or admin of the organization to send the invitation again, or <Link to="/sign-in">sign in</Link> if you already joined.
        </p>
      </>
    );
  return (
    <main className={styles.page}>
      <section className={styles.card} aria-labelledby="accept-title">
        <h1 id="accept-title">{found?.kind === 'accepted' ? 'Welcome' : 'Accept your invitation'}</h1>
        {body}
      </section>
    </main>
  );
}

function Joined({ token }: { token: DashboardToken }) {
  return (
    <>
      <p role="status">
        You joined <strong>{token.organization.name}</strong> as {article(token.member.role)} <strong>{token.member.role}</strong>, signed in as{' '}
        {token.member.email}.
      </p>
      <Link to="/inbox">Open the inbox</Link>
    </>
  );
}

/** The invited email has no account: accepting creates it, with this password. */
function NewAccount({ token, onAccepted }: { token: string; onAccepted: (token: DashboardToken) => void }) {
  const session = useSession();
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const accept = useMutation({ mutationFn: () => session.acceptInvite({ token, password, name: name || undefined }), onSuccess: onAccepted });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    accept.mutate();
  };
  const inline = errorFor(accept.error, 'password') ?? errorFor(accept.error, 'name');
  return (
    <form onSubmit={submit} className={local.form} aria-label="Create your account">
      <p>Choose a password to create your account. You will sign in with the email address the invitation was sent to.</p>
      {!inline && <ErrorMessage error={accept.error} />}
      <TextField
        label="Your name"
        autoComplete="name"
        maxLength={100}
        value={name}
        onChange={(e) => setName(e.target.value)}
        error={errorFor(accept.error, 'name')}
      />
      <TextField
        label="Password"
        type="password"
        autoComplete="new-password"
        required
        minLength={10}
        maxLength={200}
        hint="At least 10 characters."
        value={password}
        onChange={(e) => setPassword(e.target.value)}
        error={errorFor(accept.error, 'password')}
      />
      <Button type="submit" variant="primary" disabled={accept.isPending}>
        {accept.isPending ? 'Joining…' : 'Create account and join'}
      </Button>
    </form>
  );
}

/**
 * The invited email has an account: it proves itself with a dashboard token of its own, so the
 * person accepts while signed in as themselves (signing in here first if needed).
 */
function ExistingAccount({ token, onAccepted }: { token: string; onAccepted: (token: DashboardToken) => void }) {
  const session = useSession();
  const state = useSessionState();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [signInFirst, setSignInFirst] = useState(false);
  const accept = useMutation({
    mutationFn: async () => {
      if (signInFirst || state.status !== 'signed_in') await session.signIn({ email, password });
      return session.acceptInvite({ token });
    },
    onSuccess: onAccepted,
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    accept.mutate();
  };
  if (state.status === 'loading') return <Loading label="Checking whether you are signed in…" />;
  const signedInAs = state.status === 'signed_in' && !signInFirst ? state.token.member.email : null;
  return (
    <form onSubmit={submit} className={local.form} aria-label="Accept with your account">
      {signedInAs ? (
        <p>
          The invited address already has an account. You are signed in as <strong>{signedInAs}</strong>: accept with this account if the invitation was sent to
          it.
        </p>
      ) : (
        <p>The invited address already has an account: sign in with it to accept.</p>
      )}
      <ErrorMessage error={accept.error} />
      {!signedInAs && (
        <>
          <TextField label="Email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
          <TextField label="Password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        </>
      )}
      <Button type="submit" variant="primary" disabled={accept.isPending}>
        {accept.isPending ? 'Joining…' : signedInAs ? 'Accept invitation' : 'Sign in and accept'}
      </Button>
      {signedInAs && (
        <Button onClick={() => setSignInFirst(true)} disabled={accept.isPending}>
          Use another account
        </Button>
      )}
    </form>
  );
}

export const Route = createLazyRoute('/accept-invite')({ component: AcceptInvitePage });
