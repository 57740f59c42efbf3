/** The API types the templates page uses, from the server's schemas (types only: nothing of the server is bundled). */
export type { Template, TemplateSync, CreateTemplateInput, TemplateParameters } from '../../../../src/modules/templates/templates.schemas.ts';
export type { TemplateCategory, TemplateStatus } from '../../../../src/provider/provider.schemas.ts';
