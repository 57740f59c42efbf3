import { GraphError } from './graph-errors.ts';
import { DOWNLOAD_PATH, MultipartBody, ownedNumber, type GraphCall, type GraphDeps, type GraphRouter, type Json } from './graph-http.ts';
import { baseMimeType, LARGEST_MEDIA_BYTES, MEDIA_KINDS, MEDIA_LIMITS, mediaKindOf, type SandboxMedia } from './media.ts';

/** Room for the multipart boundaries and the other fields around the largest accepted file. */
const MULTIPART_OVERHEAD_BYTES = 1_000_000;

const ACCEPTED = MEDIA_KINDS.map((kind) => `${kind}: ${MEDIA_LIMITS[kind].mimeTypes.join(', ')}`).join('; ');

function uploadError(details: string): GraphError {
  return new GraphError(131053, details);
}

function notFound(details: string): GraphError {
  return new GraphError(100, details, { status: 404, message: 'Media not found' });
}

/** `GET /{media_id}`: the file's metadata and a download URL under the sandbox's own Graph prefix. */
export function mediaNode(
  media: SandboxMedia,
  call: Pick<GraphCall, 'request'>,
  prefix: string,
  sign: (id: string) => { mid: string; ext: string; hash: string },
): Json {
  const query = new URLSearchParams(sign(media.id));
  return {
    messaging_product: 'whatsapp',
    url: `${call.request.protocol}://${call.request.host}${prefix}${DOWNLOAD_PATH}?${query.toString()}`,
    mime_type: media.mimeType,
    sha256: media.sha256,
    file_size: String(media.bytes.length),
    id: media.id,
  };
}

/** Media upload and download (§5). Getting and deleting by id live with the other nodes. */
export function mediaRoutes(router: GraphRouter, deps: GraphDeps): void {
  router.authed(
    'POST',
    '/:version/:id/media',
    'whatsapp',
    async (call) => {
      const { wabaId, request } = call;
      const number = ownedNumber(call, 'post');
      if (!(request.body instanceof MultipartBody))
        throw new GraphError(100, 'Upload media as multipart/form-data with the fields file, type and messaging_product.');
      const { fields, files } = request.body;
      if (fields.messaging_product === undefined) throw new GraphError(100, 'The parameter messaging_product is required.');
      if (fields.messaging_product !== 'whatsapp')
        throw new GraphError(100, `Param messaging_product must be one of {WHATSAPP} - got "${fields.messaging_product}".`);
      const file = files.get('file');
      if (file === undefined) throw new GraphError(100, 'The parameter file is required.');
      const type = fields.type;
      if (type === undefined || type.trim() === '') throw new GraphError(100, 'The parameter type is required.');

      const kind = mediaKindOf(type);
      if (kind === undefined) throw uploadError(`Param type "${type}" is not a supported media type. Accepted: ${ACCEPTED}.`);
      // A part labelled with a different type is a client mix-up the provider would catch on inspection.
      if (file.type !== '' && file.type !== 'application/octet-stream' && baseMimeType(file.type) !== baseMimeType(type)) {
        throw uploadError(`The file part is ${file.type} but type says ${type}.`);
      }
      const { maxBytes } = MEDIA_LIMITS[kind];
      if (file.size === 0) throw uploadError('The file is empty.');
      if (file.size > maxBytes) throw uploadError(`The file is ${file.size} bytes; ${kind} media may be at most ${maxBytes} bytes.`);

      const stored = await deps.media.put({
        wabaId,
        phoneNumberId: number.phoneNumberId,
        mimeType: type.trim(),
        bytes: Buffer.from(await file.arrayBuffer()),
        filename: file.name === '' || file.name === 'blob' ? undefined : file.name,
        origin: 'uploaded',
      });
      if (stored === undefined) throw uploadError(`The file is larger than the sandbox keeps (${deps.media.maxTotalBytes} bytes).`);
      return { id: stored.id };
    },
    { bodyLimit: LARGEST_MEDIA_BYTES + MULTIPART_OVERHEAD_BYTES },
  );

  // The download URL works like the provider's CDN link: it needs a token of the owning account too,
  // and answers 404 once its five minutes are over (§5).
  router.open('GET', DOWNLOAD_PATH, async (request, reply) => {
    const { grant } = await router.authenticate(request);
    const query = request.query as { mid?: unknown; ext?: unknown; hash?: unknown };
    const verdict = deps.media.verifyDownload(query);
    if (verdict === 'expired') throw notFound('The media URL has expired; get a fresh one with GET /{media_id}.');
    if (verdict === 'invalid') throw notFound('The media URL is not valid.');
    const media = await deps.media.find(String(query.mid));
    if (media === undefined || media.wabaId !== grant.wabaId) throw notFound('The media does not exist, was deleted or has expired.');
    void reply.type(media.mimeType).header('content-length', String(media.bytes.length));
    if (media.filename !== undefined) void reply.header('content-disposition', `attachment; filename="${media.filename.replace(/[^\x20-\x7e]|["\\]/g, '_')}"`);
    return reply.send(media.bytes);
  });
}
