// GET /access: the calling credential (key or console session), whatever its scopes.
import { accessOf } from '../../domain/access/keys.ts';
import type { Handler } from '../handler.ts';

export const getAccess: Handler<'getAccess'> = async ({ auth, em }) => ({ status: 200, data: await accessOf(em, auth) });
