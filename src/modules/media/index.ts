/**
 * Media: the files an organization sends and receives. Owns `POST /v1/media` (multipart uploads,
 * checked against the provider's types, sizes and the files' signatures), reading and downloading
 * them, the bytes in the media storage (a directory, by default under DATA_DIR, or an S3-compatible
 * bucket, as MEDIA_STORAGE_URL says, behind a small interface), the provider's per-number ids of
 * uploaded files (re-uploaded before the provider forgets them), and fetching the files customers
 * send (`media.fetch`).
 */
import type { MediaStorageConfig } from '../../config/config.ts';
import type { Module } from '../module.ts';
import { createFileMediaStorage, type MediaStorage } from './media-storage.ts';
import { mediaJobs } from './media.job.ts';
import { registerMediaRoutes } from './media.routes.ts';
import { createMediaService, type MediaService, type MediaServiceDeps } from './media.service.ts';
import { createMediaStore } from './media.store.ts';

export function createMediaModule(deps: Omit<MediaServiceDeps, 'store'>): Module<MediaService> {
  const service = createMediaService({ ...deps, store: createMediaStore() });
  return { name: 'media', service, routes: (server) => registerMediaRoutes(server, service), jobs: mediaJobs(service) };
}

export type { MediaService, StagedUpload } from './media.service.ts';
export type { Media } from './media.schemas.ts';
export type { MediaReference } from './media-reference.ts';
export type { MediaStorage } from './media-storage.ts';

/** The storage MEDIA_STORAGE_URL names. The S3 client is loaded only for a bucket: it adds some 35 MiB to a process. */
export async function openMediaStorage(config: MediaStorageConfig): Promise<MediaStorage> {
  if (config.kind === 'file') return createFileMediaStorage(config.directory);
  const { openS3MediaStorage } = await import('./media-storage-s3.ts');
  return openS3MediaStorage(config);
}
