import { mediaFetch } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { MediaService } from './media.service.ts';

export function mediaJobs(service: MediaService): JobRegistration[] {
  return [handleJob(mediaFetch, (payload, context) => service.fetchInbound(payload.media_id, context))];
}
