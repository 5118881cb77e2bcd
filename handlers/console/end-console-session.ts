// DELETE /console-sessions/current: the console's "Sign out", revoking the calling session (a key is a 403).
import { endConsoleSession as end } from '../../domain/access/console-links.ts';
import type { Handler } from '../handler.ts';

export const endConsoleSession: Handler<'endConsoleSession'> = async ({ auth, actor, em }) => ({ status: 200, data: await end(em, auth.keyId, actor) });
