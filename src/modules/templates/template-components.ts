/**
 * A template's components between the API's words (snake_case JSON, as stored and shown) and the
 * port's (camelCase), and the placeholders their texts hold. Pure functions: both the checks on a
 * new definition and the checks on a send read placeholders through here, so they cannot disagree.
 */
import { invalidParam } from '../../lib/errors.ts';
import type { TemplateComponent } from '../../provider/provider.ts';

export type ParameterFormat = 'positional' | 'named';

const snake = (key: string) => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());

/**
 * Renames every key, except below `definition` (what the provider defined itself, kept as given)
 * and `examples` (keyed by the template's own placeholder names).
 */
function renameKeys(value: unknown, rename: (key: string) => string, key?: string): unknown {
  if (key === 'definition' || key === 'examples') return value;
  if (Array.isArray(value)) return value.map((item) => renameKeys(item, rename));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([name, inner]) => [rename(name), renameKeys(inner, rename, name)]));
}

/** The port's components as the API shows and stores them. */
export const componentsJson = (components: TemplateComponent[]) => JSON.stringify(renameKeys(components, snake));

/** Components in the API's snake_case (a create body, a stored row) in the port's words. */
export const toPortComponents = (components: readonly object[]) => renameKeys(components, camel) as TemplateComponent[];

const POSITIONAL = /^[1-9][0-9]*$/;
const NAMED = /^[a-z_][a-z0-9_]*$/;

/**
 * The distinct placeholders of a text, in order of first appearance: `{{1}}`… for positional
 * templates, `{{first_name}}`… for named ones. `invalid` lists what sits between braces but is not
 * a placeholder of that format.
 */
export function placeholdersOf(text: string, format: ParameterFormat): { names: string[]; invalid: string[] } {
  const names: string[] = [];
  const invalid: string[] = [];
  for (const match of text.matchAll(/\{\{([^{}]*)\}\}/g)) {
    const inner = (match[1] ?? '').trim();
    if (!(format === 'named' ? NAMED : POSITIONAL).test(inner)) invalid.push(match[0]);
    else if (!names.includes(inner)) names.push(inner);
  }
  return { names, invalid };
}

/** A URL button's address is completed at send time only when it ends in `{{1}}`. */
export const isDynamicUrl = (url: string) => /\{\{\s*1\s*\}\}$/.test(url);

/**
 * The rules of a definition that the provider's review would refuse with a bare "invalid parameter"
 * and a schema cannot express: one component of each kind, a body, placeholders of the template's
 * format numbered without gaps, an example for every placeholder. Refusing them here names the field.
 */
export function checkDefinition(components: readonly Record<string, unknown>[], format: ParameterFormat): void {
  const seen = new Set<unknown>();
  components.forEach((component, index) => {
    const at = `/components/${index}`;
    if (seen.has(component.type)) throw invalidParam(`${at}/type`, `repeats a ${String(component.type)} component: a template has at most one of each`);
    seen.add(component.type);
    if (component.type === 'header' && component.format === 'text') {
      const names = checkText(String(component.text), format, `${at}/text`);
      if (names.length > 1) throw invalidParam(`${at}/text`, 'may hold at most one placeholder');
      if (names.length === 1 && component.example === undefined)
        throw invalidParam(`${at}/example`, 'is required: the provider reviews a header placeholder with an example value', 'missing');
    }
    if (component.type === 'body') checkBodyExamples(component, checkText(String(component.text), format, `${at}/text`), format, at);
    if (component.type === 'footer' && /\{\{/.test(String(component.text))) throw invalidParam(`${at}/text`, 'may not hold placeholders');
    if (component.type === 'buttons') checkButtons(component.buttons as Record<string, unknown>[], `${at}/buttons`);
  });
  if (!seen.has('body')) throw invalidParam('/components', 'must hold a body component', 'missing');
}

function checkText(text: string, format: ParameterFormat, at: string): string[] {
  const { names, invalid } = placeholdersOf(text, format);
  if (invalid.length > 0) {
    throw invalidParam(
      at,
      `holds ${invalid[0]}, which is not a ${format === 'named' ? 'named placeholder ({{lower_case_name}})' : 'numbered placeholder ({{1}})'}`,
    );
  }
  if (
    format === 'positional' &&
    names
      .map(Number)
      .sort((a, b) => a - b)
      .some((number, index) => number !== index + 1)
  ) {
    throw invalidParam(at, 'must number its placeholders {{1}}, {{2}}, ... without gaps');
  }
  return names;
}

function checkBodyExamples(component: Record<string, unknown>, names: string[], format: ParameterFormat, at: string): void {
  const { examples } = component;
  if (names.length === 0) {
    if (examples !== undefined) throw invalidParam(`${at}/examples`, 'is only for a body with placeholders');
    return;
  }
  if (examples === undefined) throw invalidParam(`${at}/examples`, 'is required: the provider reviews every placeholder with an example value', 'missing');
  if (format === 'positional') {
    if (!Array.isArray(examples)) throw invalidParam(`${at}/examples`, 'must be an array of one value per placeholder, in order', 'invalid_type');
    if (examples.length !== names.length) throw invalidParam(`${at}/examples`, `must hold ${names.length} value(s), one per placeholder`);
    return;
  }
  if (Array.isArray(examples)) throw invalidParam(`${at}/examples`, 'must be an object with a value per placeholder name', 'invalid_type');
  const given = Object.keys(examples as object);
  const missing = names.find((name) => !given.includes(name));
  if (missing !== undefined) throw invalidParam(`${at}/examples`, `must give an example for {{${missing}}}`);
  const extra = given.find((name) => !names.includes(name));
  if (extra !== undefined) throw invalidParam(`${at}/examples/${extra}`, 'names no placeholder of the body');
}

function checkButtons(buttons: Record<string, unknown>[], at: string): void {
  buttons.forEach((button, index) => {
    if (button.type !== 'url') return;
    const url = String(button.url);
    if (/\{\{/.test(url.replace(/\{\{\s*1\s*\}\}$/, ''))) throw invalidParam(`${at}/${index}/url`, 'may hold one placeholder, {{1}}, at its very end');
    if (isDynamicUrl(url) && button.example === undefined)
      throw invalidParam(`${at}/${index}/example`, 'is required for a URL ending in {{1}}: a full URL as sent', 'missing');
  });
}
