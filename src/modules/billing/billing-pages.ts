/** The local adapter's pages: what a person sees instead of Stripe when no payment provider is configured. */
import { escapeHtml, htmlPage } from '../../lib/html.ts';
import type { Plan } from '../usage/plans.ts';

const NO_PAYMENT =
  '<p><strong>No payment is taken.</strong> This service runs without a payment provider (the <code>local</code> billing adapter): confirming changes the plan at once, and nothing is charged.</p>';

function price(plan: Plan): string {
  return plan.monthly_price_cents === 0 ? 'free' : `$${(plan.monthly_price_cents / 100).toFixed(2)} a month, plus metered messages`;
}

function limits(plan: Plan): string {
  const rows = Object.entries(plan.limits).map(
    ([meter, limit]) =>
      `<tr><td><code>${escapeHtml(meter)}</code></td><td>${limit.limit.toLocaleString('en-US')}</td><td>${limit.hard ? 'hard: refused past it' : 'soft: warned, then billed'}</td></tr>`,
  );
  return `<table><tr><th>Meter</th><th>Monthly limit</th><th></th></tr>${rows.join('')}</table>`;
}

export function checkoutPage(plan: Plan, current: Plan): string {
  return htmlPage(
    `Subscribe to ${plan.title}`,
    `<h1>Subscribe to ${escapeHtml(plan.title)}</h1>
<p>Your organization is on <strong>${escapeHtml(current.title)}</strong> now. ${escapeHtml(plan.title)} is ${escapeHtml(price(plan))}.</p>
${NO_PAYMENT}
${limits(plan)}
<form method="post"><input type="hidden" name="plan" value="${escapeHtml(plan.name)}"><p><button type="submit">Change to ${escapeHtml(plan.title)}</button></p></form>`,
  );
}

export function portalPage(current: Plan, plans: Plan[]): string {
  const choices = plans
    .map(
      (plan) =>
        `<p><label><input type="radio" name="plan" value="${escapeHtml(plan.name)}"${plan.name === current.name ? ' checked' : ''}> <strong>${escapeHtml(plan.title)}</strong>: ${escapeHtml(price(plan))}</label></p>`,
    )
    .join('');
  return htmlPage(
    'Billing',
    `<h1>Billing</h1>
<p>Your organization is on <strong>${escapeHtml(current.title)}</strong>.</p>
${NO_PAYMENT}
<form method="post">${choices}<p><button type="submit">Change plan</button></p></form>`,
  );
}

export function donePage(from: Plan, to: Plan, dashboardUrl: string): string {
  const what =
    from.name === to.name
      ? `Your organization stays on <strong>${escapeHtml(to.title)}</strong>.`
      : `Your organization moved from ${escapeHtml(from.title)} to <strong>${escapeHtml(to.title)}</strong>.`;
  return htmlPage('Plan changed', `<h1>Done</h1><p>${what} No payment was taken.</p><p><a href="${escapeHtml(dashboardUrl)}">Back to billing</a></p>`);
}
