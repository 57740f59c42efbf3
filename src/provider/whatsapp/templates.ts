import type { Template, TemplateButton, TemplateCategory, TemplateComponent, TemplateDraft, TemplateStatus } from '../provider.ts';
import { TEMPLATE_CATEGORIES, TEMPLATE_STATUSES } from '../provider.ts';
import { asArray, asId, asObject, asString, type Json } from './json.ts';

/**
 * Templates between the provider's shapes (cloud-api-facts.md §6: upper-case types and statuses,
 * `example` objects) and the port's domain words. Reading is forgiving: a component or button this
 * adapter does not model becomes an `other` component kept as given, so listing never fails on a
 * template someone built with a newer feature.
 */

const STATUS_WORDS: ReadonlySet<string> = new Set(TEMPLATE_STATUSES);

/** APPROVED → approved, IN_APPEAL → in_appeal; a status the adapter does not know → unknown. */
export function templateStatusOf(value: unknown): TemplateStatus {
  const word = asString(value)?.toLowerCase();
  return word !== undefined && STATUS_WORDS.has(word) ? (word as TemplateStatus) : 'unknown';
}

export function templateCategoryOf(value: unknown): TemplateCategory | undefined {
  const word = asString(value)?.toLowerCase();
  return (TEMPLATE_CATEGORIES as readonly string[]).includes(word ?? '') ? (word as TemplateCategory) : undefined;
}

const QUALITY: Readonly<Record<string, string>> = { GREEN: 'high', YELLOW: 'medium', RED: 'low', UNKNOWN: 'unknown' };

function qualityOf(value: unknown): string | undefined {
  const score = asString(asObject(value)?.score);
  return score === undefined ? undefined : (QUALITY[score.toUpperCase()] ?? score.toLowerCase());
}

function firstString(value: unknown): string | undefined {
  return asString(asArray(value)[0]);
}

function readButton(raw: unknown): TemplateButton | undefined {
  const button = asObject(raw);
  const type = asString(button?.type)?.toUpperCase();
  if (button === undefined || type === undefined) return undefined;
  const text = asString(button.text);
  switch (type) {
    case 'QUICK_REPLY':
      return text === undefined ? undefined : { type: 'quick_reply', text };
    case 'URL': {
      const url = asString(button.url);
      if (text === undefined || url === undefined) return undefined;
      const example = firstString(button.example) ?? asString(button.example);
      return { type: 'url', text, url, ...(example === undefined ? {} : { example }) };
    }
    case 'PHONE_NUMBER': {
      const phoneNumber = asString(button.phone_number);
      return text === undefined || phoneNumber === undefined ? undefined : { type: 'phone_number', text, phoneNumber };
    }
    case 'COPY_CODE': {
      const example = firstString(button.example) ?? asString(button.example);
      return example === undefined ? undefined : { type: 'copy_code', example };
    }
    case 'OTP': {
      const otpType = asString(button.otp_type)?.toLowerCase() ?? 'copy_code';
      return { type: 'otp', otpType, ...(text === undefined ? {} : { text }) };
    }
    case 'FLOW': {
      if (text === undefined) return undefined;
      const flowId = asId(button.flow_id);
      const flowAction = asString(button.flow_action)?.toLowerCase();
      const navigateScreen = asString(button.navigate_screen);
      return {
        type: 'flow',
        text,
        ...(flowId === undefined ? {} : { flowId }),
        ...(flowAction === undefined ? {} : { flowAction }),
        ...(navigateScreen === undefined ? {} : { navigateScreen }),
      };
    }
    default:
      return undefined;
  }
}

function other(raw: Json): TemplateComponent {
  return { type: 'other', providerType: asString(raw.type)?.toLowerCase() ?? 'unknown', definition: raw };
}

function readComponent(rawValue: unknown): TemplateComponent | undefined {
  const raw = asObject(rawValue);
  if (raw === undefined) return undefined;
  const example = asObject(raw.example);
  switch (asString(raw.type)?.toUpperCase()) {
    case 'HEADER': {
      const format = asString(raw.format)?.toUpperCase() ?? 'TEXT';
      if (format === 'TEXT') {
        const text = asString(raw.text);
        if (text === undefined) return other(raw);
        const sample = firstString(example?.header_text) ?? asString(asObject(asArray(example?.header_text_named_params)[0])?.example);
        return { type: 'header', format: 'text', text, ...(sample === undefined ? {} : { example: sample }) };
      }
      if (format === 'IMAGE' || format === 'VIDEO' || format === 'DOCUMENT') {
        const handle = firstString(example?.header_handle);
        return { type: 'header', format: format.toLowerCase() as 'image' | 'video' | 'document', ...(handle === undefined ? {} : { example: handle }) };
      }
      if (format === 'LOCATION') return { type: 'header', format: 'location' };
      return other(raw);
    }
    case 'BODY': {
      const text = asString(raw.text);
      // Authentication templates have a body without text (the provider writes it); not modelled.
      if (text === undefined) return other(raw);
      const positional = asArray(asArray(example?.body_text)[0]).map(asString);
      const namedParams = asArray(example?.body_text_named_params).map(asObject);
      if (positional.length > 0 && positional.every((value) => value !== undefined)) {
        return { type: 'body', text, examples: positional };
      }
      if (namedParams.length > 0) {
        const examples: Record<string, string> = {};
        for (const param of namedParams) {
          const name = asString(param?.param_name);
          const value = asString(param?.example);
          if (name !== undefined && value !== undefined) examples[name] = value;
        }
        return { type: 'body', text, examples };
      }
      return { type: 'body', text };
    }
    case 'FOOTER': {
      const text = asString(raw.text);
      return text === undefined ? other(raw) : { type: 'footer', text };
    }
    case 'BUTTONS': {
      const buttons = asArray(raw.buttons).map(readButton);
      // One button the adapter cannot model would be lost by dropping it, so the whole group stays raw.
      if (buttons.length === 0 || buttons.some((button) => button === undefined)) return other(raw);
      return { type: 'buttons', buttons: buttons as TemplateButton[] };
    }
    default:
      return other(raw);
  }
}

/** One entry of `GET /{waba}/message_templates`; undefined when it lacks an id or a name. */
export function readTemplate(rawValue: unknown): Template | undefined {
  const raw = asObject(rawValue);
  const providerTemplateId = asId(raw?.id);
  const name = asString(raw?.name);
  if (raw === undefined || providerTemplateId === undefined || name === undefined) return undefined;
  return {
    providerTemplateId,
    name,
    language: asString(raw.language) ?? '',
    status: templateStatusOf(raw.status),
    category: templateCategoryOf(raw.category),
    parameterFormat: asString(raw.parameter_format)?.toUpperCase() === 'NAMED' ? 'named' : 'positional',
    components: asArray(raw.components)
      .map(readComponent)
      .filter((component): component is TemplateComponent => component !== undefined),
    quality: qualityOf(raw.quality_score),
    rejectedReason: asString(raw.rejected_reason) === 'NONE' ? undefined : asString(raw.rejected_reason),
  };
}

/** `{{first_name}}` → `first_name`: the provider wants each named example under its placeholder's name. */
function placeholderNames(text: string): string[] {
  return [...text.matchAll(/\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}/g)].map((match) => match[1] ?? '');
}

function writeButton(button: TemplateButton): Json {
  switch (button.type) {
    case 'quick_reply':
      return { type: 'QUICK_REPLY', text: button.text };
    case 'url':
      return { type: 'URL', text: button.text, url: button.url, ...(button.example === undefined ? {} : { example: [button.example] }) };
    case 'phone_number':
      return { type: 'PHONE_NUMBER', text: button.text, phone_number: button.phoneNumber };
    case 'copy_code':
      return { type: 'COPY_CODE', example: button.example };
    case 'otp':
      return { type: 'OTP', otp_type: button.otpType.toUpperCase(), ...(button.text === undefined ? {} : { text: button.text }) };
    case 'flow':
      return {
        type: 'FLOW',
        text: button.text,
        ...(button.flowId === undefined ? {} : { flow_id: button.flowId }),
        ...(button.flowAction === undefined ? {} : { flow_action: button.flowAction.toUpperCase() }),
        ...(button.navigateScreen === undefined ? {} : { navigate_screen: button.navigateScreen }),
      };
  }
}

function writeComponent(component: TemplateComponent, named: boolean): Json {
  switch (component.type) {
    case 'header': {
      if (component.format === 'location') return { type: 'HEADER', format: 'LOCATION' };
      if (component.format === 'text') {
        const example =
          component.example === undefined
            ? undefined
            : named
              ? { header_text_named_params: [{ param_name: placeholderNames(component.text)[0] ?? '', example: component.example }] }
              : { header_text: [component.example] };
        return { type: 'HEADER', format: 'TEXT', text: component.text, ...(example === undefined ? {} : { example }) };
      }
      return {
        type: 'HEADER',
        format: component.format.toUpperCase(),
        ...(component.example === undefined ? {} : { example: { header_handle: [component.example] } }),
      };
    }
    case 'body': {
      const { examples } = component;
      if (examples === undefined) return { type: 'BODY', text: component.text };
      const example = Array.isArray(examples)
        ? { body_text: [examples] }
        : { body_text_named_params: Object.entries(examples).map(([param_name, value]) => ({ param_name, example: value })) };
      return { type: 'BODY', text: component.text, example };
    }
    case 'footer':
      return { type: 'FOOTER', text: component.text };
    case 'buttons':
      return { type: 'BUTTONS', buttons: component.buttons.map(writeButton) };
    case 'other':
      return component.definition;
  }
}

/** The `POST /{waba}/message_templates` body for a draft. */
export function templateCreatePayload(draft: TemplateDraft): Json {
  const named = draft.parameterFormat === 'named';
  return {
    name: draft.name,
    language: draft.language,
    category: draft.category.toUpperCase(),
    ...(draft.parameterFormat === undefined ? {} : { parameter_format: draft.parameterFormat.toUpperCase() }),
    components: draft.components.map((component) => writeComponent(component, named)),
  };
}
