import { oauthPurge } from '../../jobs/catalog.ts';
import { purgeInBatches } from '../../jobs/purge.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { OauthService } from './oauth.service.ts';

export function oauthJobs(service: Pick<OauthService, 'purge'>): JobRegistration[] {
  return [handleJob(oauthPurge, async (_payload, context) => void (await purgeInBatches((limit) => service.purge(limit), { signal: context.signal })))];
}
