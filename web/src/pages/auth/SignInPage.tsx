import { useMutation } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { useSession, useSessionState } from '../../auth/SessionContext.tsx';
import { Button, ErrorMessage, TextField } from '../../ui/controls.tsx';
import styles from './auth.module.css';

export function SignInPage({ redirect }: { redirect: string | undefined }) {
  const session = useSession();
  const state = useSessionState();
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signIn = useMutation({
    mutationFn: () => session.signIn({ email, password }),
    onSuccess: () => navigate({ href: redirect ?? '/inbox', replace: true }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    signIn.mutate();
  };
  return (
    <main className={styles.page}>
      <form className={styles.card} onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Sign in</h1>
        {state.status === 'signed_out' && state.reason && !signIn.error && <p role="status">{state.reason}</p>}
        <ErrorMessage error={signIn.error} />
        <TextField label="Email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} autoFocus />
        <TextField label="Password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        <Button type="submit" variant="primary" disabled={signIn.isPending}>
          {signIn.isPending ? 'Signing in…' : 'Sign in'}
        </Button>
        <p className={styles.switch}>
          New here? <Link to="/sign-up">Create an organization</Link>
        </p>
      </form>
    </main>
  );
}
