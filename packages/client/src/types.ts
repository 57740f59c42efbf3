/**
 * The client's types, read off the generated `paths` (openapi-typescript's rendering of the served
 * /v1/openapi.json) by operation key, `'POST /v1/messages'`: what each operation takes and answers.
 * Nothing here repeats a schema, so a change to the API reaches the client by regenerating.
 */
import type { paths } from './generated/openapi.ts';
import type { OPERATIONS, RESOURCES } from './generated/operations.ts';
import type { Paginator } from './pagination.ts';

/** Every /v1 operation, as `'<METHOD> <path>'`: `'GET /v1/messages/{id}'`. */
export type OperationKey = keyof typeof OPERATIONS;

type Split<K> = K extends `${infer M} ${infer P}` ? { method: Lowercase<M>; path: P } : never;
type PathOf<K extends OperationKey> = Split<K>['path'] & keyof paths;

/** The generated description of one operation. */
export type Operation<K extends OperationKey> = Split<K>['method'] extends infer M
  ? M extends keyof paths[PathOf<K>]
    ? NonNullable<paths[PathOf<K>][M]>
    : never
  : never;

type Defined<T> = Exclude<T, undefined>;
type ParametersOf<K extends OperationKey> = Operation<K> extends { parameters: infer P } ? P : never;

export type PathParameters<K extends OperationKey> =
  ParametersOf<K> extends { path?: infer P } ? ([Defined<P>] extends [never] ? Record<string, never> : Defined<P>) : Record<string, never>;
/** One positional argument per path parameter, in the order they appear in the path. */
type PathArguments<P extends string> = P extends `${string}{${string}}${infer Rest}` ? [string | number, ...PathArguments<Rest>] : [];

export type Query<K extends OperationKey> =
  ParametersOf<K> extends { query?: infer Q } ? ([Defined<Q>] extends [never] ? Record<string, never> : Defined<Q>) : Record<string, never>;

type JsonBody<K extends OperationKey> =
  Operation<K> extends { requestBody?: infer R } ? (Defined<R> extends { content: { 'application/json': infer B } } ? B : never) : never;

/** A file upload (`POST /v1/media`): the file, with the form's other fields as the operation documents them. */
export interface FileUpload {
  /** The file's bytes; a `File` brings its name and type, a bare `Blob` is named `upload`. */
  file: Blob;
  /** The file name sent with the part; defaults to the `File`'s own name. */
  filename?: string;
  /** The MIME type, overriding the part's own (for a `Blob` without a type). */
  type?: string;
  metadata?: Record<string, unknown>;
}

type Kind<K extends OperationKey> = (typeof OPERATIONS)[K]['input'];

/** What a call takes besides its path parameters: the JSON body, the query, a file, or nothing. */
export type Input<K extends OperationKey> =
  Kind<K> extends 'json' ? JsonBody<K> : Kind<K> extends 'multipart' ? FileUpload : Kind<K> extends 'query' ? Query<K> : never;

type SuccessStatus = 200 | 201 | 202 | 204;
type Responses<K extends OperationKey> = Operation<K> extends { responses: infer R } ? R : never;
type JsonAnswer<R> = R extends { content: { 'application/json': infer B } } ? B : never;

/** What a call answers: the parsed JSON of its success, or the `Response` itself for bytes and streams. */
export type Answer<K extends OperationKey> = (typeof OPERATIONS)[K]['response'] extends 'raw'
  ? Response
  : { [S in SuccessStatus & keyof Responses<K>]: JsonAnswer<Responses<K>[S]> }[SuccessStatus & keyof Responses<K>];

/** The operations whose answer is a page: `{object: 'list', data, has_more, next_cursor}`. */
export type ListOperationKey = { [K in OperationKey]: (typeof OPERATIONS)[K]['list'] extends null ? never : K }[OperationKey];

/** One item of a list operation's pages. */
export type Item<K extends ListOperationKey> = Answer<K> extends { data: (infer T)[] } ? T : never;

/** One page of a list, as the API answers it. */
export interface Page<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Options every call takes, on top of the client's own. */
export interface CallOptions {
  /** Your own key instead of a generated one; it is sent on every retry of this call. */
  idempotencyKey?: string;
  /** Milliseconds the whole call may take, retries and their waits included. */
  timeout?: number;
  /** Aborts the call, whichever attempt or wait it is in. */
  signal?: AbortSignal;
  /** Retries after a 429, a 503, a retryable error or a lost connection; 0 for none. */
  maxRetries?: number;
  /** Extra headers (`Last-Event-ID` on the stream, `If-None-Match` on a download). */
  headers?: Record<string, string>;
}

/** Whether a call's input may be left out: nothing in it is required. */
type InputArguments<K extends OperationKey> = Kind<K> extends 'none' ? [] : Record<string, never> extends Input<K> ? [input?: Input<K>] : [input: Input<K>];

/** The arguments of a namespace method: the path parameters in order, the input, then the call's options. */
export type MethodArguments<K extends OperationKey> = [...PathArguments<PathOf<K>>, ...InputArguments<K>, options?: CallOptions];

/** What `client.request(key, ...)` takes besides the key. */
export type RequestInput<K extends OperationKey> = (Record<string, never> extends PathParameters<K> ? { path?: undefined } : { path: PathParameters<K> }) &
  (Kind<K> extends 'json' | 'multipart' ? (Record<string, never> extends Input<K> ? { body?: Input<K> } : { body: Input<K> }) : { body?: undefined }) &
  (Kind<K> extends 'query' ? (Record<string, never> extends Query<K> ? { query?: Query<K> } : { query: Query<K> }) : { query?: undefined }) &
  CallOptions;

/** A namespace method: a list operation answers a `Paginator`, every other a promise of its answer. */
export type Method<K extends OperationKey> = K extends ListOperationKey
  ? (...args: MethodArguments<K>) => Paginator<Item<K>, Answer<K> & Page<Item<K>>>
  : (...args: MethodArguments<K>) => Promise<Answer<K>>;

type Bind<T> = { readonly [Name in keyof T]: T[Name] extends OperationKey ? Method<T[Name]> : Bind<T[Name]> };

/** `client.messages`, `client.conversations.notes`, …: every operation under a name derived from its path. */
export type Resources = Bind<typeof RESOURCES>;

// Named resources, for annotating your own code: each is what its `retrieve` answers.
export type Message = Answer<'GET /v1/messages/{id}'>;
export type Conversation = Answer<'GET /v1/conversations/{id}'>;
export type Contact = Answer<'GET /v1/contacts/{id}'>;
export type Connection = Answer<'GET /v1/connections/{id}'>;
export type Template = Answer<'GET /v1/templates/{id}'>;
export type Notification = Answer<'GET /v1/notifications/{id}'>;
export type WebhookEndpoint = Answer<'GET /v1/webhook-endpoints/{id}'>;
export type Media = Answer<'GET /v1/media/{id}'>;
export type Run = Answer<'GET /v1/runs/{id}'>;
export type Automation = Answer<'GET /v1/automations/{id}'>;
export type Approval = Answer<'GET /v1/approvals/{id}'>;
export type Schedule = Answer<'GET /v1/schedules/{id}'>;
export type Note = Item<'GET /v1/conversations/{id}/notes'>;
export type Lock = Answer<'GET /v1/conversations/{id}/lock'>;
export type ApiKey = Item<'GET /v1/api-keys'>;
