// GET /media/{assetId}: one image asset of the key's catalog, its addresses signed, with the items that name it.
import { readAsset } from '../../domain/media/asset-view.ts';
import { withStoredUrls } from '../../domain/media/stored-urls.ts';
import type { Handler } from '../handler.ts';
import { linksOf } from './links.ts';

export const getMediaAsset: Handler<'getMediaAsset'> = async ({ em, auth, params, services }) => ({
  status: 200,
  data: await withStoredUrls(await readAsset(em, auth.catalogId, params.assetId), linksOf(services)),
});
