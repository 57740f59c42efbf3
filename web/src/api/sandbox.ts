/**
 * The sandbox provider's control API (docs/sandbox.md), mounted at /sandbox only when the service
 * runs in sandbox mode. The dashboard uses it so a newcomer can connect a number and play the
 * customer without curl; it is absent (404) against the real provider, and the UI hides it.
 */
export interface SandboxNumber {
  phone_number_id: string;
  display_phone_number: string;
}

export async function sandboxAvailable(): Promise<boolean> {
  try {
    const response = await fetch('/sandbox/control/numbers', { headers: { accept: 'application/json' } });
    return response.ok;
  } catch {
    return false;
  }
}

/** A customer writes to one of the sandbox's numbers: the provider's webhook reaches the service. */
export async function sendAsCustomer(input: { phone_number_id: string; from: string; name?: string; text: string }): Promise<void> {
  const response = await fetch('/sandbox/control/inbound', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ phone_number_id: input.phone_number_id, from: input.from, name: input.name, type: 'text', text: input.text }),
  });
  if (!response.ok) {
    const body = (await response.json().catch(() => null)) as { error?: { message?: string } } | null;
    throw new Error(body?.error?.message ?? `The sandbox answered ${response.status}.`);
  }
}
