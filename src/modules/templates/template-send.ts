/**
 * The parameters of a template send, checked against the template as stored and turned into the
 * port's content. Every refusal names the offending field, so a client learns what to fix before
 * anything reaches the provider, whose own refusals (132000, 132012) name neither field nor value.
 */
import { AppError, invalidParam } from '../../lib/errors.ts';
import type { MessageContent, TemplateBodyParameter, TemplateButtonParameter, TemplateHeaderParameter } from '../../provider/provider.ts';
import type { MediaReference } from '../media/media-reference.ts';
import { isDynamicUrl, placeholdersOf, type ParameterFormat } from './template-components.ts';
import type { TemplateSendInput } from './templates.schemas.ts';

export type TemplateContent = Extract<MessageContent<MediaReference>, { type: 'template' }>;

/** What a send is checked against: the stored template. */
export interface SendableTemplate {
  name: string;
  language: string;
  parameterFormat: ParameterFormat;
  /** As stored: the API's snake_case. */
  components: Record<string, unknown>[];
}

type Component = Record<string, unknown>;
type BodyInput = NonNullable<TemplateSendInput['body']>;
type BodyItem = Extract<BodyInput, unknown[]>[number];

const mismatch = (param: string, message: string) => new AppError('template_parameters_mismatch', message, { param });
const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/**
 * The rules of the `template` object that its schema cannot express: how the template is named,
 * and how header media is named. Checked before the template is looked up.
 */
export function checkSendShape(input: TemplateSendInput, param: string, parametersParam = param): void {
  if (input.id !== undefined) {
    if (input.name !== undefined) throw invalidParam(`${param}/name`, 'cannot be combined with id');
    if (input.language !== undefined) throw invalidParam(`${param}/language`, 'cannot be combined with id');
  } else {
    if (input.name === undefined && input.language === undefined)
      throw invalidParam(`${param}/id`, 'is required, unless name and language are given', 'missing');
    if (input.name === undefined) throw invalidParam(`${param}/name`, 'is required with language', 'missing');
    if (input.language === undefined) throw invalidParam(`${param}/language`, 'is required with name', 'missing');
  }
  const header = input.header;
  if (header?.type === 'image' || header?.type === 'video' || header?.type === 'document') {
    if ((header.media_id === undefined) === (header.link === undefined))
      throw invalidParam(`${parametersParam}/header`, 'needs exactly one of media_id and link');
    if (header.filename !== undefined && header.type !== 'document') throw invalidParam(`${parametersParam}/header/filename`, 'is only for documents');
  }
}

/** The send's parameters against the template's placeholders; answers the port's content. */
export function matchParameters(template: SendableTemplate, input: TemplateSendInput, param: string): TemplateContent {
  const find = (type: string) => template.components.find((component) => component.type === type);
  const headerParameter = headerOf(find('header'), input.header, template.parameterFormat, `${param}/header`);
  const bodyParameters = bodyOf(find('body'), input.body, template.parameterFormat, `${param}/body`);
  const buttonParameters = buttonsOf(template.components, input.buttons ?? [], `${param}/buttons`);
  return {
    type: 'template',
    name: template.name,
    language: template.language,
    ...(headerParameter === undefined ? {} : { headerParameter }),
    ...(bodyParameters.length === 0 ? {} : { bodyParameters }),
    ...(buttonParameters.length === 0 ? {} : { buttonParameters }),
  };
}

function headerOf(
  component: Component | undefined,
  header: TemplateSendInput['header'],
  format: ParameterFormat,
  at: string,
): TemplateHeaderParameter<MediaReference> | undefined {
  const expected = expectedHeader(component, format);
  if (expected === undefined) {
    if (header !== undefined)
      throw mismatch(
        at,
        component === undefined ? 'The template has no header: send no header parameter.' : "The template's header is fixed text: send no header parameter.",
      );
    return undefined;
  }
  if (header === undefined) throw mismatch(at, `The template's header needs a parameter of type ${expected.type}.`);
  if (header.type !== expected.type) throw mismatch(at, `The template's header is of type ${expected.type}, not ${header.type}.`);
  switch (header.type) {
    case 'text':
      return { type: 'text', text: header.text, ...(expected.name === undefined ? {} : { name: expected.name }) };
    case 'location':
      return header;
    default: {
      const { type, media_id: mediaId, link, filename } = header;
      return { type, media: mediaId === undefined ? { link: link! } : { mediaId }, ...(filename === undefined ? {} : { filename }) };
    }
  }
}

/** The header parameter a template takes, if any: a text header takes one only for its placeholder. */
function expectedHeader(component: Component | undefined, format: ParameterFormat): { type: string; name?: string } | undefined {
  if (component === undefined) return undefined;
  if (component.format !== 'text') return { type: String(component.format) };
  const [name] = placeholdersOf(String(component.text), format).names;
  if (name === undefined) return undefined;
  return format === 'named' ? { type: 'text', name } : { type: 'text' };
}

function bodyOf(component: Component | undefined, body: BodyInput | undefined, format: ParameterFormat, at: string): TemplateBodyParameter[] {
  const names = typeof component?.text === 'string' ? placeholdersOf(component.text, format).names : [];
  if (body !== undefined && !Array.isArray(body)) {
    if (format === 'positional') throw mismatch(at, "The template's placeholders are numbered: send body as an array of values, in order.");
    const extra = Object.keys(body).find((key) => !names.includes(key));
    if (extra !== undefined) throw mismatch(`${at}/${extra}`, `The template's body has no placeholder {{${extra}}}.`);
    return named(names, body, at, (name) => ({ type: 'text', text: body[name]!, name }));
  }
  const items = (body ?? []).map(toBodyParameter);
  if (format === 'positional') {
    const withName = items.findIndex((item) => item.name !== undefined);
    if (withName !== -1) throw mismatch(`${at}/${withName}`, "The template's placeholders are numbered: parameters carry no name.");
    if (items.length !== names.length) {
      const message = `The template's body has ${plural(names.length, 'placeholder')}; ${plural(items.length, 'parameter')} given.`;
      throw mismatch(items.length > names.length ? `${at}/${names.length}` : at, message);
    }
    return items;
  }
  const byName: Record<string, TemplateBodyParameter> = {};
  items.forEach((item, index) => {
    if (item.name === undefined)
      throw mismatch(`${at}/${index}`, "The template's placeholders are named: give each parameter its name, or send body as an object.");
    if (!names.includes(item.name)) throw mismatch(`${at}/${index}`, `The template's body has no placeholder {{${item.name}}}.`);
    if (byName[item.name] !== undefined) throw mismatch(`${at}/${index}`, `{{${item.name}}} is given twice.`);
    byName[item.name] = item;
  });
  return named(names, byName, at, (name) => byName[name]!);
}

/** Named parameters in the template's order, once every placeholder has its value. */
function named(names: string[], given: Record<string, unknown>, at: string, parameter: (name: string) => TemplateBodyParameter): TemplateBodyParameter[] {
  const missing = names.find((name) => given[name] === undefined);
  if (missing !== undefined) throw mismatch(at, `No value for the body's placeholder {{${missing}}}.`);
  return names.map(parameter);
}

function toBodyParameter(item: BodyItem): TemplateBodyParameter {
  if (typeof item === 'string') return { type: 'text', text: item };
  if (item.type !== 'currency') return item;
  const { fallback, code, amount_1000: amount1000, name } = item;
  return { type: 'currency', fallback, currencyCode: code, amount1000, ...(name === undefined ? {} : { name }) };
}

/** The parameter type a template button takes at send time, if any. */
function parameterTypeOf(button: Component): TemplateButtonParameter['type'] | undefined {
  switch (button.type) {
    case 'quick_reply':
      return 'quick_reply';
    case 'copy_code':
      return 'copy_code';
    case 'url':
      return isDynamicUrl(String(button.url)) ? 'url' : undefined;
    // One-time-password buttons carry the code the way a URL button carries its suffix.
    case 'otp':
      return 'url';
    default:
      return undefined;
  }
}

/** A quick reply's payload is optional; the other parameterised buttons cannot be sent without theirs. */
const requiresParameter = (type: TemplateButtonParameter['type'] | undefined) => type === 'url' || type === 'copy_code';

function buttonsOf(components: Component[], given: NonNullable<TemplateSendInput['buttons']>, at: string): TemplateButtonParameter[] {
  const buttons = (components.find((component) => component.type === 'buttons')?.buttons ?? []) as Component[];
  const seen = new Set<number>();
  const parameters = given.map((parameter, index): TemplateButtonParameter => {
    const button = buttons[parameter.index];
    if (button === undefined) throw mismatch(`${at}/${index}`, `The template has no button ${parameter.index} (it has ${plural(buttons.length, 'button')}).`);
    if (seen.has(parameter.index)) throw mismatch(`${at}/${index}`, `Button ${parameter.index} is given twice.`);
    seen.add(parameter.index);
    const expected = parameterTypeOf(button);
    if (parameter.type !== expected) {
      throw mismatch(
        `${at}/${index}`,
        `Button ${parameter.index} is a ${String(button.type)} button: it takes ${expected === undefined ? 'no parameter' : `a ${expected} parameter`}, not ${parameter.type}.`,
      );
    }
    switch (parameter.type) {
      case 'url':
        return { type: 'url', index: parameter.index, urlSuffix: parameter.text };
      default:
        return parameter;
    }
  });
  const missing = buttons.findIndex((button, index) => requiresParameter(parameterTypeOf(button)) && !seen.has(index));
  if (missing !== -1) throw mismatch(at, `Button ${missing} (${String(buttons[missing]!.type)}) needs a ${parameterTypeOf(buttons[missing]!)} parameter.`);
  return parameters.sort((a, b) => a.index - b.index);
}

/**
 * The placeholders a send of a template must fill, in the words of a send's `template` object: the
 * header parameter's type, the body's placeholders in order (`1`, `2`… or `first_name`…), and the
 * buttons that take a parameter. Read through the same functions as the checks above, so what a
 * caller is told to fill and what a send is checked against cannot disagree.
 */
export interface ParameterSlots {
  format: ParameterFormat;
  header: { type: string; name?: string } | null;
  body: string[];
  buttons: { index: number; type: TemplateButtonParameter['type']; required: boolean }[];
}

export function parameterSlotsOf(template: Pick<SendableTemplate, 'parameterFormat' | 'components'>): ParameterSlots {
  const find = (type: string) => template.components.find((component) => component.type === type);
  const body = find('body');
  const buttons = (find('buttons')?.buttons ?? []) as Component[];
  return {
    format: template.parameterFormat,
    header: expectedHeader(find('header'), template.parameterFormat) ?? null,
    body: typeof body?.text === 'string' ? placeholdersOf(body.text, template.parameterFormat).names : [],
    buttons: buttons.flatMap((button, index) => {
      const type = parameterTypeOf(button);
      return type === undefined ? [] : [{ index, type, required: requiresParameter(type) }];
    }),
  };
}
