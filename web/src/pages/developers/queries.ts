/** The query keys of the Developers pages (kept here rather than in api/keys.ts: no live event touches them). */
export const developerKeys = {
  apiKeys: ['developers', 'api-keys'] as const,
  apiKeyList: (status: string) => ['developers', 'api-keys', status] as const,
  webhookEndpoints: ['developers', 'webhook-endpoints'] as const,
  webhookEndpoint: (id: string) => ['developers', 'webhook-endpoints', id] as const,
  deliveries: (endpointId: string) => ['developers', 'webhook-deliveries', endpointId] as const,
  deliveryList: (endpointId: string, status: string) => ['developers', 'webhook-deliveries', endpointId, status] as const,
  auditLog: (filters: object) => ['developers', 'audit-log', filters] as const,
  authorizedApps: ['developers', 'authorized-apps'] as const,
};
