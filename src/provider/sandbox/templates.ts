import type { Clock } from '../../lib/clock.ts';
import { GraphError } from './graph-errors.ts';
import { newSeq, type SandboxStore } from './store/index.ts';
import type { SandboxTemplateRow } from './store/tables.ts';

/**
 * Message templates (§6): the store, the provider's checks when one is created, and its checks when
 * one is sent. Errors are the provider's codes: 100 for a bad definition, 132xxx for a bad send.
 */

export const TEMPLATE_CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const;
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number];

export const TEMPLATE_STATUSES = [
  'APPROVED',
  'PENDING',
  'REJECTED',
  'PAUSED',
  'DISABLED',
  'IN_APPEAL',
  'PENDING_DELETION',
  'DELETED',
  'ARCHIVED',
  'LIMIT_EXCEEDED',
] as const;
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number];

/** Webhook events: every status plus the ones that only notify (§3.4). */
export const TEMPLATE_EVENTS = [...TEMPLATE_STATUSES, 'FLAGGED', 'LOCKED', 'REINSTATED', 'UNARCHIVED'] as const;
export type TemplateEvent = (typeof TEMPLATE_EVENTS)[number];

export const TEMPLATE_REASONS = [
  'ABUSIVE_CONTENT',
  'CATEGORY_NOT_AVAILABLE',
  'INCORRECT_CATEGORY',
  'INVALID_FORMAT',
  'NONE',
  'PROMOTIONAL',
  'SCAM',
  'TAG_CONTENT_MISMATCH',
] as const;

/** The languages the provider accepts for templates. */
export const TEMPLATE_LANGUAGES: ReadonlySet<string> = new Set([
  'af',
  'sq',
  'ar',
  'ar_EG',
  'ar_AE',
  'ar_LB',
  'ar_MA',
  'ar_QA',
  'az',
  'be_BY',
  'bn',
  'bn_IN',
  'bg',
  'ca',
  'zh_CN',
  'zh_HK',
  'zh_TW',
  'hr',
  'cs',
  'da',
  'prs_AF',
  'nl',
  'nl_BE',
  'en',
  'en_GB',
  'en_US',
  'en_AE',
  'en_AU',
  'en_CA',
  'en_GH',
  'en_IE',
  'en_IN',
  'en_JM',
  'en_MY',
  'en_NZ',
  'en_QA',
  'en_SG',
  'en_UG',
  'en_ZA',
  'et',
  'fil',
  'fi',
  'fr',
  'fr_BE',
  'fr_CA',
  'fr_CH',
  'fr_CI',
  'fr_MA',
  'ka',
  'de',
  'de_AT',
  'de_CH',
  'el',
  'gu',
  'ha',
  'he',
  'hi',
  'hu',
  'id',
  'ga',
  'it',
  'ja',
  'kn',
  'kk',
  'rw_RW',
  'ko',
  'ky_KG',
  'lo',
  'lv',
  'lt',
  'mk',
  'ms',
  'ml',
  'mr',
  'nb',
  'ps_AF',
  'fa',
  'pl',
  'pt_BR',
  'pt_PT',
  'pa',
  'ro',
  'ru',
  'sr',
  'si_LK',
  'sk',
  'sl',
  'es',
  'es_AR',
  'es_CL',
  'es_CO',
  'es_CR',
  'es_DO',
  'es_EC',
  'es_HN',
  'es_MX',
  'es_PA',
  'es_PE',
  'es_ES',
  'es_UY',
  'sw',
  'sv',
  'ta',
  'te',
  'th',
  'tr',
  'uk',
  'ur',
  'uz',
  'vi',
  'zu',
]);

const NAME_PATTERN = /^[a-z0-9_]{1,512}$/;
const HEADER_FORMATS = ['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT', 'LOCATION'] as const;
const BUTTON_TYPES = ['QUICK_REPLY', 'URL', 'PHONE_NUMBER', 'COPY_CODE', 'OTP', 'FLOW', 'CATALOG', 'MPM', 'VOICE_CALL'] as const;
const COMPONENT_TYPES = ['HEADER', 'BODY', 'FOOTER', 'BUTTONS'] as const;
type ComponentType = (typeof COMPONENT_TYPES)[number];
type ParameterFormat = 'POSITIONAL' | 'NAMED';
type Json = Record<string, unknown>;

export interface SandboxTemplate {
  id: string;
  wabaId: string;
  name: string;
  language: string;
  category: TemplateCategory;
  status: TemplateStatus;
  parameterFormat: ParameterFormat;
  /** As the business defined them, with `type` (and `format`) in upper case. */
  components: Json[];
  /** The reason given with the latest status change, if any. */
  reason: string | null;
  createdAt: Date;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(details: string): GraphError {
  return new GraphError(100, details, { message: 'Invalid parameter' });
}

const POSITIONAL = /\{\{\s*(\d+)\s*\}\}/g;
const NAMED = /\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}/g;
const ANY_PLACEHOLDER = /\{\{([^}]*)\}\}/g;

/** The placeholders of a text: `{{1}}`… for positional templates, `{{first_name}}`… for named ones. */
export function placeholders(text: string, format: ParameterFormat): string[] {
  const found = [...text.matchAll(format === 'NAMED' ? NAMED : POSITIONAL)].map((match) => match[1] ?? '');
  return [...new Set(found)];
}

function checkPlaceholders(text: string, format: ParameterFormat, where: string): string[] {
  const all = [...text.matchAll(ANY_PLACEHOLDER)].length;
  const found = placeholders(text, format);
  const total = [...text.matchAll(format === 'NAMED' ? NAMED : POSITIONAL)].length;
  if (all !== total)
    throw invalid(`${where} has a variable that is not a valid ${format === 'NAMED' ? 'named ({{lower_case_name}})' : 'positional ({{1}})'} parameter.`);
  if (format === 'POSITIONAL') {
    const numbers = found.map(Number).sort((a, b) => a - b);
    if (numbers.some((value, index) => value !== index + 1)) throw invalid(`${where} variables must be numbered {{1}}, {{2}}, … without gaps.`);
  }
  return found;
}

function text(component: Json, key: string, where: string, max: number, options: { required: boolean }): string | undefined {
  const value = component[key];
  if (value === undefined) {
    if (options.required) throw invalid(`${where}.${key} is required.`);
    return undefined;
  }
  if (typeof value !== 'string' || value.trim() === '') throw invalid(`${where}.${key} must be a non-empty string.`);
  if (value.length > max) throw invalid(`${where}.${key} must be at most ${max} characters long.`);
  return value;
}

function requireExamples(component: Json, where: string, variables: string[], format: ParameterFormat, kind: 'header' | 'body'): void {
  if (variables.length === 0) return;
  const example = component.example;
  const namedKey = `${kind}_text_named_params`;
  if (format === 'NAMED') {
    const named = isObject(example) ? example[namedKey] : undefined;
    const names = Array.isArray(named) ? named.map((entry) => (isObject(entry) ? entry.param_name : undefined)) : [];
    const missing = variables.filter((variable) => !names.includes(variable));
    if (missing.length > 0) throw invalid(`${where}.example.${namedKey} must give an example for ${missing.join(', ')}.`);
    return;
  }
  const values = isObject(example) ? example[`${kind}_text`] : undefined;
  const row: unknown = kind === 'body' ? (Array.isArray(values) ? (values as unknown[])[0] : undefined) : values;
  if (!Array.isArray(row) || row.length !== variables.length || !row.every((value) => typeof value === 'string')) {
    throw invalid(`${where}.example.${kind}_text must give ${variables.length} example value(s) for its variables.`);
  }
}

/** Validates a `POST /{waba}/message_templates` body the way the provider reviews a definition. */
export function parseTemplateDefinition(body: unknown): {
  name: string;
  language: string;
  category: TemplateCategory;
  parameterFormat: ParameterFormat;
  components: Json[];
} {
  if (!isObject(body)) throw invalid('The request body must be an object.');
  if (typeof body.name !== 'string') throw invalid('The parameter name is required.');
  if (!NAME_PATTERN.test(body.name)) throw invalid('Param name must contain only lowercase letters, numbers and underscores, at most 512 characters.');
  if (typeof body.language !== 'string') throw invalid('The parameter language is required.');
  if (!TEMPLATE_LANGUAGES.has(body.language))
    throw invalid(`Param language "${body.language}" is not a supported template language (for example en_US, pt_BR, es).`);
  if (typeof body.category !== 'string') throw invalid('The parameter category is required.');
  const category = body.category.toUpperCase();
  if (!(TEMPLATE_CATEGORIES as readonly string[]).includes(category)) throw invalid(`Param category must be one of {${TEMPLATE_CATEGORIES.join(', ')}}.`);
  const format = body.parameter_format === undefined ? 'POSITIONAL' : typeof body.parameter_format === 'string' ? body.parameter_format.toUpperCase() : '';
  if (format !== 'POSITIONAL' && format !== 'NAMED') throw invalid('Param parameter_format must be one of {POSITIONAL, NAMED}.');
  if (!Array.isArray(body.components) || body.components.length === 0) throw invalid('The parameter components is required and must be a non-empty array.');

  const seen = new Set<ComponentType>();
  const components = body.components.map((raw: unknown, index): Json => {
    const where = `components[${index}]`;
    if (!isObject(raw) || typeof raw.type !== 'string') throw invalid(`${where}.type is required.`);
    const type = raw.type.toUpperCase() as ComponentType;
    if (!COMPONENT_TYPES.includes(type)) throw invalid(`${where}.type must be one of {${COMPONENT_TYPES.join(', ')}}.`);
    if (seen.has(type)) throw invalid(`A template has at most one ${type} component.`);
    seen.add(type);
    const component: Json = { ...raw, type };
    switch (type) {
      case 'HEADER': {
        const headerFormat = typeof raw.format === 'string' ? raw.format.toUpperCase() : undefined;
        if (headerFormat === undefined || !(HEADER_FORMATS as readonly string[]).includes(headerFormat)) {
          throw invalid(`${where}.format must be one of {${HEADER_FORMATS.join(', ')}}.`);
        }
        component.format = headerFormat;
        if (headerFormat === 'TEXT') {
          const value = text(raw, 'text', where, 60, { required: true }) ?? '';
          const variables = checkPlaceholders(value, format, `${where}.text`);
          if (variables.length > 1) throw invalid(`${where}.text may have at most one variable.`);
          requireExamples(raw, where, variables, format, 'header');
        }
        break;
      }
      case 'BODY': {
        // Authentication bodies are fixed by the provider and carry no text of their own.
        const value = text(raw, 'text', where, 1024, { required: category !== 'AUTHENTICATION' });
        if (value !== undefined) requireExamples(raw, where, checkPlaceholders(value, format, `${where}.text`), format, 'body');
        break;
      }
      case 'FOOTER': {
        const value = text(raw, 'text', where, 60, { required: category !== 'AUTHENTICATION' });
        if (value !== undefined && placeholders(value, format).length > 0) throw invalid(`${where}.text may not have variables.`);
        break;
      }
      case 'BUTTONS': {
        if (!Array.isArray(raw.buttons) || raw.buttons.length === 0 || raw.buttons.length > 10) throw invalid(`${where}.buttons must hold 1 to 10 buttons.`);
        component.buttons = raw.buttons.map((button: unknown, buttonIndex): Json => {
          const at = `${where}.buttons[${buttonIndex}]`;
          if (!isObject(button) || typeof button.type !== 'string') throw invalid(`${at}.type is required.`);
          const buttonType = button.type.toUpperCase();
          if (!(BUTTON_TYPES as readonly string[]).includes(buttonType)) throw invalid(`${at}.type must be one of {${BUTTON_TYPES.join(', ')}}.`);
          if (['QUICK_REPLY', 'URL', 'PHONE_NUMBER'].includes(buttonType)) text(button, 'text', at, 25, { required: true });
          if (buttonType === 'URL') text(button, 'url', at, 2000, { required: true });
          if (buttonType === 'PHONE_NUMBER') text(button, 'phone_number', at, 20, { required: true });
          return { ...button, type: buttonType };
        });
        break;
      }
    }
    return component;
  });
  if (!seen.has('BODY')) throw invalid('A template needs a BODY component.');
  return { name: body.name, language: body.language, category: category as TemplateCategory, parameterFormat: format, components };
}

/** The template node as the provider lists it. */
export function templateNode(template: SandboxTemplate): Json {
  return {
    name: template.name,
    parameter_format: template.parameterFormat,
    components: template.components,
    language: template.language,
    status: template.status,
    category: template.category,
    id: template.id,
  };
}

function expectedParameters(component: Json | undefined, format: ParameterFormat): { count: number; names: string[]; media: string | undefined } {
  if (component === undefined) return { count: 0, names: [], media: undefined };
  if (component.type === 'HEADER' && component.format !== 'TEXT') {
    return { count: 1, names: [], media: String(component.format).toLowerCase() };
  }
  const names = typeof component.text === 'string' ? placeholders(component.text, format) : [];
  return { count: names.length, names, media: undefined };
}

function givenParameters(components: unknown[] | undefined, type: 'header' | 'body'): Json[] {
  const parameters: Json[] = [];
  for (const component of components ?? []) {
    if (!isObject(component) || typeof component.type !== 'string' || component.type.toLowerCase() !== type) continue;
    if (Array.isArray(component.parameters)) parameters.push(...component.parameters.filter(isObject));
  }
  return parameters;
}

/**
 * The provider's checks on a template send (§6): the (name, language) pair must exist and be
 * APPROVED, and header and body must carry one parameter per variable.
 */
export function checkTemplateSend(
  template: SandboxTemplate | undefined,
  request: { name: string; language: string; components: unknown[] | undefined },
): SandboxTemplate {
  if (template === undefined) {
    throw new GraphError(132001, `template name (${request.name}) does not exist in ${request.language}`);
  }
  if (template.status === 'PAUSED')
    throw new GraphError(132015, `Template ${template.name} (${template.language}) is paused because of low quality; it cannot be sent until it is unpaused.`);
  if (template.status === 'DISABLED')
    throw new GraphError(132016, `Template ${template.name} (${template.language}) has been disabled because of low quality and cannot be sent.`);
  if (template.status !== 'APPROVED') {
    throw new GraphError(132001, `template name (${template.name}) in ${template.language} is ${template.status}, not APPROVED`);
  }
  for (const type of ['header', 'body'] as const) {
    const component = template.components.find((candidate) => candidate.type === type.toUpperCase());
    const expected = expectedParameters(component, template.parameterFormat);
    const given = givenParameters(request.components, type);
    if (given.length !== expected.count) {
      throw new GraphError(132000, `${type}: number of localizable_params (${given.length}) does not match the expected number of params (${expected.count})`);
    }
    if (expected.media !== undefined && given[0]?.type !== expected.media) {
      throw new GraphError(
        132012,
        `header: format mismatch, expected ${expected.media.toUpperCase()}, received ${typeof given[0]?.type === 'string' ? given[0].type.toUpperCase() : 'NOTHING'}`,
      );
    }
    if (template.parameterFormat === 'NAMED') {
      const names = given.map((parameter) => parameter.parameter_name);
      const missing = expected.names.filter((name) => !names.includes(name));
      if (missing.length > 0) throw new GraphError(132000, `${type}: no parameter given for ${missing.map((name) => `{{${name}}}`).join(', ')}`);
    }
  }
  return template;
}

/** Every account starts with the provider's approved sample (§6). */
const HELLO_WORLD_COMPONENTS: Json[] = [
  { type: 'HEADER', format: 'TEXT', text: 'Hello World' },
  {
    type: 'BODY',
    text: 'Welcome and congratulations!! This message demonstrates your ability to send a WhatsApp message notification from the Cloud API, hosted by Meta. Thank you for taking the time to test with us.',
  },
  { type: 'FOOTER', text: 'WhatsApp Business Platform sample message' },
];

export interface TemplateFilter {
  name?: string;
  status?: string;
  category?: string;
  language?: string;
}

function templateOf(row: SandboxTemplateRow): SandboxTemplate {
  return {
    id: row.id,
    wabaId: row.waba_id,
    name: row.name,
    language: row.language,
    category: row.category as TemplateCategory,
    status: row.status as TemplateStatus,
    parameterFormat: row.parameter_format as ParameterFormat,
    components: JSON.parse(row.components) as Json[],
    reason: row.reason,
    createdAt: new Date(row.created_at),
  };
}

function alreadyExists(definition: { name: string; language: string }): GraphError {
  return new GraphError(100, `A template named ${definition.name} already exists in ${definition.language}.`, {
    subcode: 2388024,
    message: 'Message template already exists',
  });
}

/**
 * The templates of every account, in the host's store (`sandbox_templates`): every process serving
 * the sandbox sees the same ones, and a restart keeps them.
 */
export function createTemplateStore(options: { store: SandboxStore; clock: Clock; newId: () => Promise<string> }) {
  const { store, clock } = options;
  const { db } = store;

  async function findByName(wabaId: string, name: string, language: string): Promise<SandboxTemplate | undefined> {
    const row = await db
      .selectFrom('sandbox_templates')
      .selectAll()
      .where('waba_id', '=', wabaId)
      .where('name', '=', name)
      .where('language', '=', language)
      .executeTakeFirst();
    return row === undefined ? undefined : templateOf(row);
  }

  /** Stores a template; a (name, language) the account already has is the provider's 2388024. */
  async function add(wabaId: string, fields: Omit<SandboxTemplate, 'id' | 'wabaId' | 'createdAt' | 'reason'>): Promise<SandboxTemplate> {
    const template: SandboxTemplate = { ...fields, id: await options.newId(), wabaId, reason: null, createdAt: clock.now() };
    try {
      await db
        .insertInto('sandbox_templates')
        .values({
          id: template.id,
          seq: newSeq(template.createdAt),
          waba_id: wabaId,
          name: template.name,
          language: template.language,
          category: template.category,
          status: template.status,
          parameter_format: template.parameterFormat,
          components: JSON.stringify(template.components),
          reason: null,
          created_at: template.createdAt.toISOString(),
        })
        .execute();
    } catch (error) {
      // The unique index is the only check, so two creates racing in different processes cannot both
      // pass it; a refused create leaves its node id unused, which costs nothing.
      if (store.isUniqueViolation(error)) throw alreadyExists(template);
      throw error;
    }
    return template;
  }

  return {
    seed(wabaId: string): Promise<SandboxTemplate> {
      return add(wabaId, {
        name: 'hello_world',
        language: 'en_US',
        category: 'UTILITY',
        status: 'APPROVED',
        parameterFormat: 'POSITIONAL',
        components: HELLO_WORLD_COMPONENTS,
      });
    },

    /** Validates and stores a new definition as PENDING; a (name, language) pair exists at most once. */
    async create(wabaId: string, body: unknown): Promise<SandboxTemplate> {
      return add(wabaId, { ...parseTemplateDefinition(body), status: 'PENDING' });
    },

    async find(id: string): Promise<SandboxTemplate | undefined> {
      const row = await db.selectFrom('sandbox_templates').selectAll().where('id', '=', id).executeTakeFirst();
      return row === undefined ? undefined : templateOf(row);
    },

    findByName,

    /** The account's templates, newest first, narrowed by exact field matches. */
    async list(wabaId: string, filter: TemplateFilter): Promise<SandboxTemplate[]> {
      let query = db.selectFrom('sandbox_templates').selectAll().where('waba_id', '=', wabaId);
      if (filter.name !== undefined) query = query.where('name', '=', filter.name);
      if (filter.status !== undefined) query = query.where('status', '=', filter.status.toUpperCase());
      if (filter.category !== undefined) query = query.where('category', '=', filter.category.toUpperCase());
      if (filter.language !== undefined) query = query.where('language', '=', filter.language);
      return (await query.orderBy('seq', 'desc').execute()).map(templateOf);
    },

    /** Records a status change (and the reason given with it). */
    async update(id: string, change: { status: TemplateStatus; reason: string | null }): Promise<void> {
      await db.updateTable('sandbox_templates').set({ status: change.status, reason: change.reason }).where('id', '=', id).execute();
    },

    async remove(id: string): Promise<void> {
      await db.deleteFrom('sandbox_templates').where('id', '=', id).execute();
    },
  };
}

export type TemplateStore = ReturnType<typeof createTemplateStore>;
