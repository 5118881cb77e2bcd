// POST /keys: issues a key of the caller's catalog within the caller's own scopes; the answer is the only place the key is shown.
import { issueKey } from '../../domain/access/keys.ts';
import type { Handler } from '../handler.ts';

export const createKey: Handler<'createKey'> = async ({ auth, actor, body, em, services }) => ({
  status: 201,
  data: await issueKey(em, auth, body, services.config.environment, actor),
});
