import { mediaFetch } from '../../jobs/catalog.ts';
import type { Worker } from '../../jobs/worker.ts';
import type { MediaService } from './media.service.ts';

export function registerMediaJobs(worker: Worker, service: MediaService): void {
  worker.register(mediaFetch, (payload, context) => service.fetchInbound(payload.media_id, context));
}
