// POST /media/{assetId}/refresh: queues a check of the image's source now; 202 with the asset as it is.
import { refreshAsset } from '../../domain/media/asset-view.ts';
import { withStoredUrls } from '../../domain/media/stored-urls.ts';
import type { Handler } from '../handler.ts';
import { linksOf } from './links.ts';

export const refreshMediaAsset: Handler<'refreshMediaAsset'> = async ({ em, auth, params, services }) => ({
  status: 202,
  data: await withStoredUrls(await refreshAsset(em, auth.catalogId, params.assetId), linksOf(services)),
});
