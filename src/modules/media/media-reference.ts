/**
 * How the API names media in a message before it is sent: one of our uploads (`med_…`, turned into
 * the provider's own id for the sending number at the moment of sending) or a public link the
 * provider fetches itself.
 */
export type MediaReference = { mediaId: string } | { link: string };
