// Ordered delivery per resource (docs/webhooks.md, "Ordered delivery"): the claim's condition that holds a delivery back while an earlier one of its resource is pending.
//
// An ordered webhook's deliveries are never born leased by the fan-out: each goes through the
// claim, so it is attempted only once the deliveries ahead of it in its resource are settled.

/**
 * SQL over a webhook_deliveries row `d`: true unless an earlier delivery of the same webhook and
 * resource is still pending (due, leased, waiting for a retry or paused). A delivered or
 * exhausted one no longer holds the next back, so one failing item stalls only its own events.
 * Unordered deliveries (no resource_key) are never held.
 */
export const NOT_HELD_BACK = `(d.resource_key IS NULL OR NOT EXISTS (SELECT 1 FROM webhook_deliveries p
  WHERE p.webhook_id = d.webhook_id AND p.resource_key = d.resource_key AND p.resource_seq < d.resource_seq AND p.status = 'pending'))`;
