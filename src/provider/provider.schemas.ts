/**
 * The provider's vocabulary that the API's own schemas show (media kinds, template states and
 * categories), apart from the port so that a schema file, and so a browser bundle, can import it.
 */
export const MEDIA_KINDS = ['image', 'video', 'audio', 'document', 'sticker'] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

export const TEMPLATE_STATUSES = [
  'approved',
  'pending',
  'rejected',
  'paused',
  'disabled',
  'in_appeal',
  'flagged',
  'locked',
  'pending_deletion',
  'deleted',
  'archived',
  'limit_exceeded',
  'unknown',
] as const;
/** A template's review state; `unknown` stands for a state the adapter does not know yet. */
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number];

export const TEMPLATE_CATEGORIES = ['marketing', 'utility', 'authentication'] as const;
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number];
