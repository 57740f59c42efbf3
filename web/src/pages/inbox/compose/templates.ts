import type { Template, TemplateSendInput } from './types.ts';

/**
 * What a send of a template must fill, read from its stored components the way the service reads
 * them (src/modules/templates/template-components.ts, template-send.ts: placeholders are `{{1}}`… or
 * `{{name}}`; a URL button takes a parameter when its URL ends in `{{1}}`, a copy-code or one-time
 * password button always). The service checks every send again and names the field it refuses.
 */
type Component = Record<string, unknown>;

export type MediaFormat = 'image' | 'video' | 'document';

export interface Slots {
  format: Template['parameter_format'];
  /** A text header's one placeholder, or a media header's kind. */
  header: { kind: 'text'; name: string } | { kind: MediaFormat } | null;
  /** The body's placeholders: numbered ones in number order (the order their values are sent in), named ones as they appear. */
  body: string[];
  buttons: { index: number; type: 'url' | 'copy_code'; text: string }[];
  /** Why the inbox cannot send this template, when it cannot. */
  unsupported: string | null;
}

const POSITIONAL = /^[1-9][0-9]*$/;
const NAMED = /^[a-z_][a-z0-9_]*$/;

export function placeholdersOf(text: string, format: Slots['format']): string[] {
  const names: string[] = [];
  for (const match of text.matchAll(/\{\{([^{}]*)\}\}/g)) {
    const inner = (match[1] ?? '').trim();
    if ((format === 'named' ? NAMED : POSITIONAL).test(inner) && !names.includes(inner)) names.push(inner);
  }
  return format === 'positional' ? names.sort((a, b) => Number(a) - Number(b)) : names;
}

const isDynamicUrl = (url: unknown) => typeof url === 'string' && /\{\{\s*1\s*\}\}$/.test(url);

const textOf = (component: Component) => (typeof component.text === 'string' ? component.text : '');

function find(template: Template, type: string): Component | undefined {
  return template.components.find((component) => component.type === type);
}

export function slotsOf(template: Template): Slots {
  const format = template.parameter_format;
  const header = find(template, 'header');
  const body = find(template, 'body');
  const buttons = (find(template, 'buttons')?.buttons ?? []) as Component[];
  let headerSlot: Slots['header'] = null;
  let unsupported: string | null = null;
  if (header?.format === 'text') {
    const [name] = placeholdersOf(textOf(header), format);
    if (name !== undefined) headerSlot = { kind: 'text', name };
  } else if (header?.format === 'image' || header?.format === 'video' || header?.format === 'document') {
    headerSlot = { kind: header.format };
  } else if (header?.format === 'location') {
    unsupported = 'It has a location header, which the inbox cannot fill in yet: send it through the API.';
  }
  if (template.components.some((component) => component.type === 'other')) {
    unsupported = 'It has a component the inbox does not show (a carousel, say): send it through the API.';
  }
  return {
    format,
    header: headerSlot,
    body: typeof body?.text === 'string' ? placeholdersOf(body.text, format) : [],
    buttons: buttons.flatMap((button, index): Slots['buttons'] => {
      const text = typeof button.text === 'string' ? button.text : 'Copy code';
      if (button.type === 'url' && isDynamicUrl(button.url)) return [{ index, type: 'url' as const, text }];
      // A one-time password's code travels the way a URL button's suffix does.
      if (button.type === 'otp') return [{ index, type: 'url' as const, text: typeof button.text === 'string' ? button.text : 'Code' }];
      if (button.type === 'copy_code') return [{ index, type: 'copy_code' as const, text }];
      return [];
    }),
    unsupported,
  };
}

/** The values typed in the picker, by field: `header`, `body:<placeholder>`, `button:<index>`. */
export type Values = Record<string, string>;

export const bodyField = (name: string) => `body:${name}`;
export const buttonField = (index: number) => `button:${index}`;

/** The first field still empty, for the picker to say what is missing. */
export function missingField(slots: Slots, values: Values, headerMediaId: string | null): string | null {
  if (slots.header?.kind === 'text' && !values.header?.trim()) return 'header';
  if (slots.header && slots.header.kind !== 'text' && !headerMediaId) return 'header';
  const body = slots.body.find((name) => !values[bodyField(name)]?.trim());
  if (body !== undefined) return bodyField(body);
  const button = slots.buttons.find((slot) => !values[buttonField(slot.index)]?.trim());
  return button ? buttonField(button.index) : null;
}

/** The send body's `template` object. */
export function templateInput(template: Template, slots: Slots, values: Values, headerMediaId: string | null): TemplateSendInput {
  const input: TemplateSendInput = { id: template.id };
  if (slots.header?.kind === 'text') input.header = { type: 'text', text: values.header ?? '' };
  else if (slots.header && headerMediaId) input.header = { type: slots.header.kind, media_id: headerMediaId };
  if (slots.body.length > 0) {
    input.body =
      slots.format === 'named'
        ? Object.fromEntries(slots.body.map((name) => [name, values[bodyField(name)] ?? '']))
        : slots.body.map((name) => values[bodyField(name)] ?? '');
  }
  if (slots.buttons.length > 0) {
    input.buttons = slots.buttons.map((slot) => {
      const value = values[buttonField(slot.index)] ?? '';
      return slot.type === 'url' ? { index: slot.index, type: 'url' as const, text: value } : { index: slot.index, type: 'copy_code' as const, code: value };
    });
  }
  return input;
}

/** A text with its placeholders filled where a value was given, and left as `{{…}}` where not. */
function fill(text: string, format: Slots['format'], valueOf: (name: string) => string | undefined): string {
  return text.replace(/\{\{([^{}]*)\}\}/g, (whole, inner: string) => {
    const name = inner.trim();
    if (!(format === 'named' ? NAMED : POSITIONAL).test(name)) return whole;
    return valueOf(name)?.trim() || whole;
  });
}

export interface Preview {
  header: string | null;
  body: string;
  footer: string | null;
  buttons: string[];
}

/** The message as the customer will read it (media headers aside). */
export function previewOf(template: Template, values: Values): Preview {
  const format = template.parameter_format;
  const header = find(template, 'header');
  const body = find(template, 'body');
  const footer = find(template, 'footer');
  const buttons = (find(template, 'buttons')?.buttons ?? []) as Component[];
  return {
    header: header?.format === 'text' ? fill(textOf(header), format, () => values.header) : header ? `[${String(header.format)} header]` : null,
    body: typeof body?.text === 'string' ? fill(body.text, format, (name) => values[bodyField(name)]) : '',
    footer: typeof footer?.text === 'string' ? footer.text : null,
    buttons: buttons.map((button) => (typeof button.text === 'string' ? button.text : button.type === 'copy_code' ? 'Copy code' : String(button.type))),
  };
}
