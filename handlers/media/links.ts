// The signer of stored images' addresses for a request's answer (storage driver and MEDIA_URL_TTL_SECONDS from the services).
import { mediaLinks } from '../../domain/media/stored-urls.ts';
import type { MediaLinks } from '../../domain/media/stored-urls.ts';
import type { Services } from '../../platform/http/types.ts';

export const linksOf = (services: Services): MediaLinks => mediaLinks(services.storage, services.config.media.urlTtlSeconds);
