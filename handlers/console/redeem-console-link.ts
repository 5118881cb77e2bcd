// POST /console-sessions: redeems a console link once for a session (no key; a refused link is a 401 naming why).
import { redeemConsoleLink as redeem } from '../../domain/access/console-links.ts';
import type { Handler } from '../handler.ts';

export const redeemConsoleLink: Handler<'redeemConsoleLink'> = async ({ actor, body, em, services }) => ({
  status: 201,
  data: await redeem(em, body.link, services.config.environment, actor),
});
