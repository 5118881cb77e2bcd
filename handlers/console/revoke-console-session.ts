// DELETE /admin/console-sessions/{sessionId}: revokes a console link, and its session if it was redeemed (scope admin).
import { revokeConsoleSession as revoke } from '../../domain/access/console-links.ts';
import type { Handler } from '../handler.ts';

export const revokeConsoleSession: Handler<'revokeConsoleSession'> = async ({ actor, params, em }) => ({ status: 200, data: await revoke(em, params.sessionId, actor) });
