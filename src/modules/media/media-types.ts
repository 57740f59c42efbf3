/**
 * Which files the provider takes as which kind of media, how large, and what their first bytes look
 * like (cloud-api-facts.md §5). Checked on upload so that a file the provider would refuse at send
 * time, minutes later and inside a job, is refused at once with a clear error instead.
 */
import { MEDIA_KINDS, type MediaKind } from '../../provider/provider.schemas.ts';

export { MEDIA_KINDS };

/**
 * The provider's ceilings, in decimal bytes as it counts them. Stickers are 100 KB when static and
 * 500 KB when animated; telling the two apart means parsing the WebP, so the larger bound applies.
 */
export const MAX_BYTES: Readonly<Record<MediaKind, number>> = {
  image: 5_000_000,
  video: 16_000_000,
  audio: 16_000_000,
  document: 100_000_000,
  sticker: 500_000,
};

export const LARGEST_MEDIA_BYTES = Math.max(...Object.values(MAX_BYTES));

/** How many leading bytes the signature checks read. */
export const SNIFF_BYTES = 16;

type Sniffer = (head: Buffer) => boolean;

const at = (offset: number, ...bytes: (number | string)[]): Sniffer => {
  const signature = Buffer.concat(bytes.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from([part]))));
  return (head) => head.length >= offset + signature.length && head.subarray(offset, offset + signature.length).equals(signature);
};
const anyOf =
  (...sniffers: Sniffer[]): Sniffer =>
  (head) =>
    sniffers.some((sniff) => sniff(head));

/** ISO base media files (MP4, 3GP, M4A) open with a box whose type is `ftyp`. */
const isoMedia = at(4, 'ftyp');
const zip = at(0, 'PK', 3, 4);
/** The legacy Office formats are OLE2 compound files. */
const compoundFile = at(0, 0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1);
/** An MPEG audio frame starts with 11 set bits; ADTS (AAC) is the variant whose layer bits are 00. */
const mpegFrame: Sniffer = (head) => head.length >= 2 && head[0] === 0xff && (head[1]! & 0xe0) === 0xe0;
const adtsFrame: Sniffer = (head) => head.length >= 2 && head[0] === 0xff && (head[1]! & 0xf6) === 0xf0;
/**
 * Plain text has no signature: it is text when no NUL byte starts it (the surest sign of a binary
 * file, which also refuses UTF-16) and it does not open like any other accepted type.
 */
const text: Sniffer = (head) => !head.includes(0) && sniffMimeType(head) === undefined;

/** Every accepted MIME type (without parameters), its kind and its signature. */
const TYPES: Readonly<Record<string, { kind: MediaKind; sniff: Sniffer }>> = {
  'image/jpeg': { kind: 'image', sniff: at(0, 0xff, 0xd8, 0xff) },
  'image/png': { kind: 'image', sniff: at(0, 0x89, 'PNG\r\n', 0x1a, '\n') },
  'video/mp4': { kind: 'video', sniff: isoMedia },
  'video/3gpp': { kind: 'video', sniff: isoMedia },
  'audio/aac': { kind: 'audio', sniff: anyOf(adtsFrame, at(0, 'ADIF')) },
  'audio/amr': { kind: 'audio', sniff: at(0, '#!AMR') },
  'audio/mpeg': { kind: 'audio', sniff: anyOf(at(0, 'ID3'), mpegFrame) },
  'audio/mp4': { kind: 'audio', sniff: isoMedia },
  'audio/ogg': { kind: 'audio', sniff: at(0, 'OggS') },
  'text/plain': { kind: 'document', sniff: text },
  'application/pdf': { kind: 'document', sniff: at(0, '%PDF-') },
  'application/msword': { kind: 'document', sniff: compoundFile },
  'application/vnd.ms-excel': { kind: 'document', sniff: compoundFile },
  'application/vnd.ms-powerpoint': { kind: 'document', sniff: compoundFile },
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': { kind: 'document', sniff: zip },
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': { kind: 'document', sniff: zip },
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': { kind: 'document', sniff: zip },
  'image/webp': { kind: 'sticker', sniff: (head) => at(0, 'RIFF')(head) && at(8, 'WEBP')(head) },
};

/** The accepted MIME types of a kind, for error messages and the docs. */
export function mimeTypesOf(kind: MediaKind): string[] {
  return Object.keys(TYPES).filter((mimeType) => TYPES[mimeType]!.kind === kind);
}

/** The MIME type without parameters, lower case: `Audio/OGG; codecs=opus` → `audio/ogg`. */
export function baseMimeType(mimeType: string): string {
  return (mimeType.split(';')[0] ?? '').trim().toLowerCase();
}

/** The kind the provider files a MIME type under, or undefined when it takes no such file. */
export function kindOf(mimeType: string): MediaKind | undefined {
  return TYPES[baseMimeType(mimeType)]?.kind;
}

/** Whether the first bytes of a file (`SNIFF_BYTES` of them, or the whole file if shorter) fit its MIME type. */
export function bytesMatch(mimeType: string, head: Buffer): boolean {
  return TYPES[baseMimeType(mimeType)]?.sniff(head) ?? false;
}

/** The accepted type a file's first bytes look like, to say what a mismatched file seems to be. */
export function sniffMimeType(head: Buffer): string | undefined {
  // Text matches almost anything without a NUL; it is only a guess once nothing else matched.
  return Object.keys(TYPES).find((mimeType) => mimeType !== 'text/plain' && TYPES[mimeType]!.sniff(head));
}
