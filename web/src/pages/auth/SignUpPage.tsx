import { useMutation } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { useSession } from '../../auth/SessionContext.tsx';
import { Button, ErrorMessage, errorFor, TextField } from '../../ui/controls.tsx';
import styles from './auth.module.css';

export function SignUpPage() {
  const session = useSession();
  const navigate = useNavigate();
  const [form, setForm] = useState({ name: '', organization_name: '', email: '', password: '' });
  const signUp = useMutation({
    mutationFn: () => session.signUp({ ...form, name: form.name || undefined }),
    onSuccess: () => navigate({ to: '/inbox', replace: true }),
  });
  const field = (name: keyof typeof form) => ({
    value: form[name],
    onChange: (event: { target: { value: string } }) => setForm((current) => ({ ...current, [name]: event.target.value })),
    error: errorFor(signUp.error, name),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    signUp.mutate();
  };
  const inlineError = ['name', 'organization_name', 'email', 'password'].some((name) => errorFor(signUp.error, name));
  return (
    <main className={styles.page}>
      <form className={styles.card} onSubmit={submit} aria-labelledby="sign-up-title">
        <h1 id="sign-up-title">Create your organization</h1>
        {!inlineError && <ErrorMessage error={signUp.error} />}
        <TextField label="Your name" autoComplete="name" {...field('name')} autoFocus />
        <TextField label="Organization name" required {...field('organization_name')} />
        <TextField label="Email" type="email" autoComplete="email" required {...field('email')} />
        <TextField label="Password" type="password" autoComplete="new-password" required minLength={10} hint="At least 10 characters." {...field('password')} />
        <Button type="submit" variant="primary" disabled={signUp.isPending}>
          {signUp.isPending ? 'Creating…' : 'Create organization'}
        </Button>
        <p className={styles.switch}>
          Already have an account? <Link to="/sign-in">Sign in</Link>
        </p>
      </form>
    </main>
  );
}
