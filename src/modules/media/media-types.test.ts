import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MEDIA_KINDS, bytesMatch, kindOf, mimeTypesOf, sniffMimeType } from './media-types.ts';

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part))));

/** A plausible opening of each accepted type. */
const OPENINGS: Record<string, Buffer> = {
  'image/jpeg': bytes([0xff, 0xd8, 0xff, 0xdb], 'rest'),
  'image/png': bytes([0x89], 'PNG\r\n', [0x1a], '\n', [0, 0, 0, 13], 'IHDR'),
  'video/mp4': bytes([0, 0, 0, 0x20], 'ftypisom', [0, 0, 2, 0]),
  'video/3gpp': bytes([0, 0, 0, 0x14], 'ftyp3gp4', [0, 0, 0, 0]),
  'audio/aac': bytes([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc]),
  'audio/amr': bytes('#!AMR\n', [0x3c]),
  'audio/mpeg': bytes('ID3', [4, 0, 0, 0, 0, 0, 0x23]),
  'audio/mp4': bytes([0, 0, 0, 0x1c], 'ftypM4A ', [0, 0, 0, 0]),
  'audio/ogg': bytes('OggS', [0, 2, 0, 0]),
  'text/plain': bytes('Dear customer,\n'),
  'application/pdf': bytes('%PDF-1.7\n'),
  'application/msword': bytes([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0, 0]),
  'application/vnd.ms-excel': bytes([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0, 0]),
  'application/vnd.ms-powerpoint': bytes([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0, 0]),
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': bytes('PK', [3, 4, 20, 0]),
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': bytes('PK', [3, 4, 20, 0]),
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': bytes('PK', [3, 4, 20, 0]),
  'image/webp': bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8X'),
};

describe('media types', () => {
  it('every accepted type has a kind and recognises its own opening', () => {
    const accepted = MEDIA_KINDS.flatMap((kind) => mimeTypesOf(kind));
    assert.deepEqual([...accepted].sort(), Object.keys(OPENINGS).sort(), 'every accepted type is tested here');
    for (const [mimeType, opening] of Object.entries(OPENINGS)) {
      assert.ok(kindOf(mimeType), mimeType);
      assert.ok(bytesMatch(mimeType, opening), `${mimeType} recognises its opening`);
    }
  });

  it('parameters and case do not change the type', () => {
    assert.equal(kindOf('Audio/OGG; codecs=opus'), 'audio');
    assert.equal(kindOf('image/webp'), 'sticker');
    assert.equal(kindOf('image/gif'), undefined);
  });

  it('an opening of another format is refused and named', () => {
    assert.equal(bytesMatch('application/pdf', OPENINGS['image/png']!), false);
    assert.equal(sniffMimeType(OPENINGS['image/png']!), 'image/png');
    assert.equal(bytesMatch('image/webp', bytes('RIFF', [0x24, 0, 0, 0], 'WAVEfmt ')), false, 'a WAV file is RIFF but not WebP');
  });

  it('text is refused when it holds a NUL byte or opens like another type', () => {
    assert.equal(bytesMatch('text/plain', bytes('h', [0], 'e', [0], 'l', [0])), false);
    assert.equal(bytesMatch('text/plain', OPENINGS['application/pdf']!), false);
    assert.equal(bytesMatch('text/plain', bytes('Grüße\n')), true);
  });

  it('a file shorter than a signature does not match it', () => {
    assert.equal(bytesMatch('image/png', bytes([0x89], 'PN')), false);
  });
});
