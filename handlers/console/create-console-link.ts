// POST /admin/console-links: mints a single-use console link for a catalog (scope admin); its URL is shown only here.
import { mintConsoleLink } from '../../domain/access/console-links.ts';
import type { Handler } from '../handler.ts';

export const createConsoleLink: Handler<'createConsoleLink'> = async ({ actor, body, em, services }) => ({
  status: 201,
  data: await mintConsoleLink(em, body, services.config.publicBaseUrl, actor),
});
