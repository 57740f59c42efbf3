/**
 * The authorization server's own pages: signing in, consenting, and the error page shown when the
 * browser cannot safely be sent back to the app. Minimal and server-rendered until the dashboard
 * hosts the consent screen.
 */
import { escapeHtml, htmlPage } from '../../lib/html.ts';
import type { Scope } from '../credentials/scopes.schemas.ts';
import type { ClientView, ConsentView, SignInView } from './oauth.service.ts';

function clientHeader(client: ClientView, resource: string): string {
  const badge = client.verified
    ? `<p>Identified by its metadata document at <code>${escapeHtml(client.id)}</code>.</p>`
    : '<p><strong>Unverified app.</strong> It registered itself and chose its own name: only continue if you started this from an app you trust.</p>';
  return `<h1>Connect <em>${escapeHtml(client.name)}</em></h1>
${badge}
<p>After you decide, your browser goes back to <strong>${escapeHtml(client.redirectHost)}</strong>. The app will reach <code>${escapeHtml(resource)}</code> on your behalf.</p>`;
}

function scopeList(scopes: readonly Scope[]): string {
  return `<ul>${scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code></li>`).join('')}</ul>`;
}

export function signInPage(view: SignInView): string {
  const error = view.error ? `<p role="alert"><strong>${escapeHtml(view.error)}</strong></p>` : '';
  return htmlPage(
    `Connect ${view.client.name}`,
    `${clientHeader(view.client, view.resource)}
<p>It asks for:</p>${scopeList(view.scopes)}
<h2>Sign in to continue</h2>${error}
<form method="post" action="/oauth/authorize/sign-in">
<input type="hidden" name="request" value="${escapeHtml(view.request)}">
<p><label>Email <input type="email" name="email" autocomplete="username" required value="${escapeHtml(view.email ?? '')}"></label></p>
<p><label>Password <input type="password" name="password" autocomplete="current-password" required></label></p>
<p><button type="submit">Sign in</button></p>
</form>`,
  );
}

export function consentPage(view: ConsentView): string {
  const organizations = view.organizations
    .map(
      (organization, index) =>
        `<p><label><input type="radio" name="organization_id" value="${escapeHtml(organization.id)}"${index === 0 ? ' checked' : ''}> <strong>${escapeHtml(organization.name)}</strong> (you are ${escapeHtml(organization.role)}; it can grant ${organization.grantable.length} of the ${view.scopes.length} scopes)</label></p>`,
    )
    .join('');
  const scopes = view.scopes
    .map((scope) => `<p><label><input type="checkbox" name="scope" value="${escapeHtml(scope)}" checked> <code>${escapeHtml(scope)}</code></label></p>`)
    .join('');
  return htmlPage(
    `Authorize ${view.client.name}`,
    `${clientHeader(view.client, view.resource)}
<p>Signed in as <strong>${escapeHtml(view.email)}</strong>.</p>
<form method="post" action="/oauth/authorize/consent">
<input type="hidden" name="consent" value="${escapeHtml(view.consent)}">
<h2>Organization</h2>${organizations}
<h2>Scopes</h2>
<p>Untick what the app should not have. It gets only what your role in the chosen organization holds, never key management, and loses at once what your role loses later.</p>
${scopes}
<p><button type="submit" name="decision" value="approve">Authorize</button> <button type="submit" name="decision" value="deny">Deny</button></p>
</form>`,
  );
}

export function errorPage(message: string): string {
  return htmlPage('Cannot connect the app', `<h1>Cannot connect the app</h1><p>${escapeHtml(message)}</p>`);
}
