import { placeholdersOf, bodyField, type Values } from '../inbox/compose/templates.ts';
import type { CreateTemplateInput, Template, TemplateCategory } from './types.ts';

/**
 * The create form's state, and what it becomes: the `POST /v1/templates` body and the preview. The
 * placeholders are read the way the service and the inbox read them (`placeholdersOf`), so each one
 * typed in the body gets its example field, and the preview fills it with that example.
 */
export const BUTTON_TYPES = ['quick_reply', 'url', 'phone_number', 'copy_code'] as const;
export type ButtonType = (typeof BUTTON_TYPES)[number];

export const BUTTON_LABELS: Record<ButtonType, string> = {
  quick_reply: 'Quick reply',
  url: 'Link',
  phone_number: 'Call a number',
  copy_code: 'Copy a code',
};

export interface ButtonDraft {
  type: ButtonType;
  text: string;
  url: string;
  phoneNumber: string;
  /** A dynamic link's full sample URL, or a copy-code button's sample code. */
  example: string;
}

export interface TemplateDraft {
  name: string;
  language: string;
  category: TemplateCategory;
  parameterFormat: Template['parameter_format'];
  headerText: string;
  headerExample: string;
  body: string;
  /** By placeholder (`1`, `first_name`): kept when the placeholder is typed again. */
  bodyExamples: Record<string, string>;
  footer: string;
  buttons: ButtonDraft[];
}

export const emptyDraft: TemplateDraft = {
  name: '',
  language: 'en_US',
  category: 'utility',
  parameterFormat: 'positional',
  headerText: '',
  headerExample: '',
  body: '',
  bodyExamples: {},
  footer: '',
  buttons: [],
};

export const newButton = (type: ButtonType): ButtonDraft => ({ type, text: '', url: '', phoneNumber: '', example: '' });

/** A link ending in `{{1}}` is completed by each send: it needs a sample. */
export const isDynamicUrl = (url: string) => /\{\{\s*1\s*\}\}$/.test(url);

export function headerPlaceholder(draft: TemplateDraft): string | undefined {
  return placeholdersOf(draft.headerText, draft.parameterFormat)[0];
}

export function bodyPlaceholders(draft: TemplateDraft): string[] {
  return placeholdersOf(draft.body, draft.parameterFormat);
}

type Component = CreateTemplateInput['components'][number];
type Button = Extract<Component, { type: 'buttons' }>['buttons'][number];

function buttonOf(button: ButtonDraft): Button {
  switch (button.type) {
    case 'quick_reply':
      return { type: 'quick_reply', text: button.text };
    case 'url':
      return { type: 'url', text: button.text, url: button.url, ...(isDynamicUrl(button.url) ? { example: button.example } : {}) };
    case 'phone_number':
      return { type: 'phone_number', text: button.text, phone_number: button.phoneNumber };
    case 'copy_code':
      return { type: 'copy_code', example: button.example };
  }
}

/** The components as the API takes them; empty parts are left out, the service judges the rest. */
export function componentsOf(draft: TemplateDraft): Component[] {
  const components: Component[] = [];
  if (draft.headerText.trim()) {
    components.push({
      type: 'header',
      format: 'text',
      text: draft.headerText,
      ...(headerPlaceholder(draft) !== undefined ? { example: draft.headerExample } : {}),
    });
  }
  const names = bodyPlaceholders(draft);
  const examples = names.map((name) => draft.bodyExamples[name] ?? '');
  components.push({
    type: 'body',
    text: draft.body,
    ...(names.length === 0
      ? {}
      : { examples: draft.parameterFormat === 'named' ? Object.fromEntries(names.map((name, i) => [name, examples[i]!])) : examples }),
  });
  if (draft.footer.trim()) components.push({ type: 'footer', text: draft.footer });
  if (draft.buttons.length > 0) components.push({ type: 'buttons', buttons: draft.buttons.map(buttonOf) });
  return components;
}

export function createBody(draft: TemplateDraft, connectionId: string): CreateTemplateInput {
  return {
    connection_id: connectionId,
    name: draft.name,
    language: draft.language,
    category: draft.category,
    parameter_format: draft.parameterFormat,
    components: componentsOf(draft),
  };
}

/** What the preview shows: the template as it would be stored, filled with its own examples. */
export function previewInput(draft: TemplateDraft): { template: Template; values: Values } {
  const values: Values = { header: draft.headerExample };
  for (const name of bodyPlaceholders(draft)) values[bodyField(name)] = draft.bodyExamples[name] ?? '';
  // previewOf reads only the format and the components.
  const template = { parameter_format: draft.parameterFormat, components: componentsOf(draft) } as unknown as Template;
  return { template, values };
}
