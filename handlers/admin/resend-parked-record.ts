// POST /admin/parked-records/{recordId}/resend: the record back in the outbox, unchanged (scope admin).
import { resendParkedRecord as resend } from '../../domain/events/parked.ts';
import type { Handler } from '../handler.ts';

export const resendParkedRecord: Handler<'resendParkedRecord'> = async ({ actor, params, em }) => ({ status: 202, data: await resend(em, params.recordId, actor) });
