/**
 * A JSON text as the service stored it (`JSON.stringify` of what was written), handed to an answer
 * that returns it unchanged. The route's serializer writes `text` into the answer as it is
 * (`http/stored-json.ts`), which saves a `JSON.parse` per row and the generic serialization of a
 * free-form object. Anything else that serializes it (`JSON.stringify`, a serializer without the
 * splice) calls `toJSON` and gets the parsed value: the same bytes, only slower.
 */
export class StoredJson<T> {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  /** The parsed value, for code that needs to look inside. */
  toJSON(): T {
    return JSON.parse(this.text) as T;
  }
}
