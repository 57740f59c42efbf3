import { AppError } from '../../lib/errors.ts';
import type { Principal } from './principal.ts';

export interface CredentialResolvers {
  /** Answers a key remembered from the last second at once, without a promise. */
  apiKey: (key: string) => Principal | Promise<Principal>;
  dashboardToken: (token: string) => Promise<Principal>;
  oauthToken: (token: string) => Promise<Principal>;
}

/** The credential's prefix says which kind it is, so each bearer costs one lookup. */
export function createCredentialsService(resolvers: CredentialResolvers & { prefixes: { dashboardToken: string; oauthToken: string } }) {
  return {
    /** A principal, or a promise of one where the credential had to be read; a refusal is always a rejection. */
    authenticate(bearer: string): Principal | Promise<Principal> {
      if (bearer.startsWith('csk_') || bearer.startsWith('cok_')) return resolvers.apiKey(bearer);
      if (bearer.startsWith(resolvers.prefixes.dashboardToken)) return resolvers.dashboardToken(bearer);
      if (bearer.startsWith(resolvers.prefixes.oauthToken)) return resolvers.oauthToken(bearer);
      return Promise.reject(new AppError('credential_invalid', 'The credential is not one this service issues.'));
    },
  };
}

export type CredentialsService = ReturnType<typeof createCredentialsService>;
