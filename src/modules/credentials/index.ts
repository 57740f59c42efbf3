/**
 * Credentials: the four kinds of bearer credential, the scope catalogue, the role→scope table, and
 * resolving a presented credential into a `Principal`. Each kind's records live in its own module
 * (api-keys, oauth-tokens, auth); this module only dispatches to them.
 */
export { createCredentialsService, type CredentialsService } from './credentials.service.ts';
export type { Actor, Principal } from './principal.ts';
