/**
 * An approval's frozen action in words (docs/automations.md#approvals): what exactly approving will
 * do, rendered when the approval was requested. The page shows the action's JSON beside it, so
 * nothing the sentence leaves out is hidden.
 */
type Data = Record<string, unknown>;

const text = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

function send(content: Data | undefined): string {
  if (!content) return 'Sends a message';
  const type = text(content.type);
  const body = (content.text as Data | undefined)?.body;
  if (body !== undefined) return `Sends the message “${text(body)}”`;
  const template = content.template as Data | undefined;
  if (template) return `Sends the template ${text(template.name)} (${text(template.language)})`;
  const interactive = content.interactive as Data | undefined;
  const interactiveText = (interactive?.body as Data | undefined)?.text;
  if (interactiveText !== undefined) return `Sends an interactive message “${text(interactiveText)}”`;
  const media = content[type] as Data | undefined;
  return `Sends ${type === 'image' || type === 'audio' ? 'an' : 'a'} ${type}${media?.caption ? ` captioned “${text(media.caption)}”` : ''}`;
}

function list(values: unknown): string {
  return Array.isArray(values) ? values.map(text).join(', ') : '';
}

export function describeAction(action: Data, memberName: (id: string) => string): string {
  switch (action.type) {
    case 'send_message':
    case 'send_template':
      return `${send(action.content as Data | undefined)} to the run’s customer.`;
    case 'set_tags': {
      const parts = [list(action.add) && `adds the tags ${list(action.add)}`, list(action.remove) && `removes the tags ${list(action.remove)}`];
      const words = parts.filter(Boolean).join(' and ');
      return words ? `${words[0]!.toUpperCase()}${words.slice(1)} on the conversation.` : 'Changes no tags.';
    }
    case 'assign':
      return typeof action.member_id === 'string' ? `Assigns the conversation to ${memberName(action.member_id)}.` : 'Unassigns the conversation.';
    case 'handoff':
      return `Hands the conversation to an agent${typeof action.assign_to === 'string' ? ` (${memberName(action.assign_to)})` : ''}${
        typeof action.note === 'string' ? `, with the note “${action.note}”` : ''
      }.`;
    case 'http_request': {
      const request = (action.request ?? {}) as Data;
      const query = new URLSearchParams((request.query ?? {}) as Record<string, string>).toString();
      const body = typeof request.body === 'string' ? ` with the body ${request.body}` : '';
      return `Calls ${text(request.method)} ${text(request.path)}${query ? `?${query}` : ''}${body} through the connector account ${text(request.accountId)}.`;
    }
    default:
      return `Runs the ${text(action.type)} step ${text(action.step_id)}.`;
  }
}
