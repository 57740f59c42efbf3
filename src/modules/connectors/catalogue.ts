/**
 * The connector catalogue, static and in code: what each connector asks for when connecting, which
 * of its fields are secrets, what its test request is, and how its credentials go onto a request.
 * Credentials are added here, to a request already rendered, so that no expression ever sees them.
 */
import { signatureHeader } from '../../events/webhook-signature.ts';
import { invalidParam } from '../../lib/errors.ts';
import type { Connector, ConnectorField, ConnectorId } from './connectors.schemas.ts';

const DOCS_URL = 'https://docs.example.com/automations#connectors';
const ALLOWED_HOSTS_RULE = 'the host of base_url';

const baseUrl: ConnectorField = {
  name: 'base_url',
  label: 'Base URL (https://api.example.com/v1): requests go to this host only',
  type: 'string',
  required: true,
};
const testPath: ConnectorField = { name: 'test_path', label: 'Path of the test request, after the base URL', type: 'string', required: false, default: '' };

export const CONNECTORS: readonly Connector[] = [
  {
    id: 'http_bearer',
    object: 'connector',
    name: 'HTTP API (bearer token)',
    description: 'Any HTTPS API that takes `Authorization: Bearer <token>`.',
    auth_type: 'bearer',
    fields: [baseUrl, { name: 'token', label: 'Bearer token', type: 'secret', required: true }, testPath],
    allowed_hosts: ALLOWED_HOSTS_RULE,
    test_request: { method: 'GET', path: '' },
    docs_url: DOCS_URL,
  },
  {
    id: 'http_basic',
    object: 'connector',
    name: 'HTTP API (basic auth)',
    description: 'Any HTTPS API that takes a user name and password (`Authorization: Basic`).',
    auth_type: 'basic',
    fields: [
      baseUrl,
      { name: 'username', label: 'User name', type: 'string', required: true },
      { name: 'password', label: 'Password', type: 'secret', required: true },
      testPath,
    ],
    allowed_hosts: ALLOWED_HOSTS_RULE,
    test_request: { method: 'GET', path: '' },
    docs_url: DOCS_URL,
  },
  {
    id: 'http_api_key',
    object: 'connector',
    name: 'HTTP API (API key header)',
    description: 'Any HTTPS API that takes a key in a header of its own (`X-API-Key` unless told otherwise).',
    auth_type: 'api_key',
    fields: [
      baseUrl,
      { name: 'header_name', label: 'Header that carries the key', type: 'string', required: false, default: 'X-API-Key' },
      { name: 'api_key', label: 'API key', type: 'secret', required: true },
      testPath,
    ],
    allowed_hosts: ALLOWED_HOSTS_RULE,
    test_request: { method: 'GET', path: '' },
    docs_url: DOCS_URL,
  },
  {
    id: 'webhook',
    object: 'connector',
    name: 'Signed webhook',
    description:
      'Posts to one URL, signed like our webhook deliveries (`Service-Signature`, HMAC-SHA256 with the signing secret you chose), so the receiver can verify them with the same code.',
    auth_type: 'webhook',
    fields: [
      { ...baseUrl, label: 'The URL posts go to' },
      { name: 'signing_secret', label: 'Signing secret (at least 24 characters), which the receiver verifies with', type: 'secret', required: true },
    ],
    allowed_hosts: ALLOWED_HOSTS_RULE,
    test_request: { method: 'POST', path: '' },
    docs_url: DOCS_URL,
  },
];

export function connectorOf(id: ConnectorId): Connector {
  return CONNECTORS.find((connector) => connector.id === id)!;
}

/** Where the secret is among a connector's fields (each has exactly one). */
function secretField(connector: Connector): string {
  return connector.fields.find((field) => field.type === 'secret')!.name;
}

const HEADER_NAME = /^[A-Za-z0-9-]{1,64}$/;
/** Headers an API-key header must not replace: the request's own framing and its idempotency key. */
const RESERVED_HEADER_NAMES = new Set(['host', 'content-length', 'content-type', 'transfer-encoding', 'connection', 'idempotency-key', 'service-signature']);
// Control characters would split a header: a value carrying one could smuggle a second header in.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;
const MIN_SIGNING_SECRET_LENGTH = 24;

/**
 * Checks the fields a caller sent for a connector and splits them: the base URL, and the credentials
 * (every other field, defaults filled in) that are sealed. Throws `validation_failed` naming the field.
 */
export function checkFields(connector: Connector, fields: Record<string, string>): { baseUrl: string; credentials: Record<string, string> } {
  for (const name of Object.keys(fields)) {
    if (!connector.fields.some((field) => field.name === name))
      throw invalidParam(`/fields/${name}`, `is not a field of the ${connector.id} connector`, 'unknown_field');
  }
  const credentials: Record<string, string> = {};
  for (const field of connector.fields) {
    const value = fields[field.name] ?? field.default;
    if (value === undefined || (field.required && value === '')) throw invalidParam(`/fields/${field.name}`, 'is required', 'required');
    if (CONTROL_CHARACTER.test(value)) throw invalidParam(`/fields/${field.name}`, 'must not contain control characters (line breaks, tabs)');
    if (field.name !== 'base_url') credentials[field.name] = value;
  }
  const headerName = credentials.header_name;
  if (headerName !== undefined && (!HEADER_NAME.test(headerName) || RESERVED_HEADER_NAMES.has(headerName.toLowerCase()))) {
    throw invalidParam(
      '/fields/header_name',
      'must be a header name of letters, digits and dashes, other than the request’s own (Host, Content-Type, Idempotency-Key, ...)',
    );
  }
  if (credentials.test_path !== undefined && credentials.test_path !== '' && !credentials.test_path.startsWith('/')) {
    throw invalidParam('/fields/test_path', 'must start with / (it follows the base URL)');
  }
  if (connector.id === 'webhook' && credentials.signing_secret!.length < MIN_SIGNING_SECRET_LENGTH) {
    throw invalidParam('/fields/signing_secret', `must be at least ${MIN_SIGNING_SECRET_LENGTH} characters`);
  }
  return { baseUrl: fields.base_url!, credentials };
}

/** The end of the secret, to tell accounts apart; nothing of a short one. */
export function secretHint(connector: Connector, credentials: Record<string, string>): string {
  const secret = credentials[secretField(connector)] ?? '';
  return secret.length >= 12 ? `…${secret.slice(-4)}` : '…';
}

/** The path of the connector's test request, after the base URL. */
export function testPathOf(connector: Connector, credentials: Record<string, string>): string {
  return credentials.test_path || connector.test_request.path;
}

/** The headers that carry an account's credentials on a request whose body is `body` (signed, for a webhook). */
export function credentialHeaders(connector: Connector, credentials: Record<string, string>, body: string, nowSeconds: number): Record<string, string> {
  switch (connector.id) {
    case 'http_bearer':
      return { authorization: `Bearer ${credentials.token}` };
    case 'http_basic':
      return { authorization: `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}` };
    case 'http_api_key':
      return { [credentials.header_name!.toLowerCase()]: credentials.api_key! };
    case 'webhook':
      return { 'service-signature': signatureHeader(body, [credentials.signing_secret!], nowSeconds) };
  }
}
