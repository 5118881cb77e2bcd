// DELETE /keys/{keyId}: revokes one of the catalog's keys at once, the caller's own included.
import { revokeCatalogKey } from '../../domain/access/keys.ts';
import type { Handler } from '../handler.ts';

export const revokeKey: Handler<'revokeKey'> = async ({ auth, actor, params, em }) => ({ status: 200, data: await revokeCatalogKey(em, auth.catalogId, params.keyId, actor) });
