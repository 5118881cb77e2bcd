// The first schema: every table DESIGN names, so later features extend rather than invent.
import { Migration } from '@mikro-orm/migrations';

export class InitialSchema extends Migration {
  override name = '0001-initial-schema';

  override up(): void {
    this.addSql(`
CREATE TABLE catalogs (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  owner_email text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT catalogs_name_key UNIQUE (name)
);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  -- Only the SHA-256 of a key is stored; the key itself is shown once, at creation.
  key_hash text NOT NULL,
  key_prefix text NOT NULL,
  scopes text[] NOT NULL,
  tier text NOT NULL DEFAULT 'free' CHECK (tier IN ('free', 'pro', 'enterprise')),
  -- An operator-set limit in place of the tier's (contracts beyond the three tiers, load tests).
  rate_limit_per_minute integer CHECK (rate_limit_per_minute > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash)
);
CREATE INDEX api_keys_catalog_idx ON api_keys (catalog_id);

-- Sliding-window counters, one row per key: the current fixed minute and the previous one.
-- subject: 'key:<api key id>' for authenticated calls, 'ip:<address>' for anonymous ones.
CREATE TABLE rate_limits (
  subject text PRIMARY KEY,
  window_start bigint NOT NULL,
  count integer NOT NULL,
  prev_count integer NOT NULL
);

CREATE TABLE idempotency_keys (
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  operation text NOT NULL,
  idempotency_key text NOT NULL,
  request_hash text NOT NULL,
  status_code integer,
  response_body text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (catalog_id, operation, idempotency_key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

CREATE TABLE categories (
  id uuid PRIMARY KEY,
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  name text NOT NULL,
  name_key text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT categories_catalog_name_key UNIQUE (catalog_id, name_key)
);

CREATE TABLE brands (
  id uuid PRIMARY KEY,
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  name text NOT NULL,
  name_key text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT brands_catalog_name_key UNIQUE (catalog_id, name_key)
);

CREATE TABLE items (
  id uuid PRIMARY KEY,
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  external_system text NOT NULL,
  external_id text NOT NULL,
  sku text,
  name text NOT NULL,
  description text,
  price numeric(20, 4),
  cost numeric(20, 4),
  weight numeric(20, 6),
  gtin13 text,
  ncm text,
  category_id uuid REFERENCES categories (id),
  brand_id uuid REFERENCES brands (id),
  tags text[] NOT NULL DEFAULT '{}',
  metadata jsonb,
  media jsonb NOT NULL DEFAULT '[]',
  track_stock boolean NOT NULL DEFAULT false,
  on_hand integer NOT NULL DEFAULT 0,
  content_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT items_identity_key UNIQUE (catalog_id, external_system, external_id)
);
CREATE UNIQUE INDEX items_catalog_sku_key ON items (catalog_id, sku) WHERE sku IS NOT NULL;
CREATE INDEX items_catalog_updated_idx ON items (catalog_id, updated_at, id);
CREATE INDEX items_tags_idx ON items USING gin (tags);

CREATE TABLE media_assets (
  id uuid PRIMARY KEY,
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  source_url text NOT NULL,
  source_url_hash text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ingested', 'failed')),
  etag text,
  content_type text,
  width integer,
  height integer,
  byte_size bigint,
  content_sha256 text,
  storage_path text,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  last_checked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT media_assets_catalog_hash_key UNIQUE (catalog_id, source_url_hash)
);

CREATE TABLE stock_movements (
  id uuid PRIMARY KEY,
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  item_id uuid NOT NULL REFERENCES items (id) ON DELETE CASCADE,
  quantity integer NOT NULL CHECK (quantity <> 0),
  reason text NOT NULL,
  reference text,
  occurred_at timestamptz NOT NULL,
  on_hand_after integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stock_movements_item_idx ON stock_movements (item_id, created_at, id);

CREATE TABLE import_jobs (
  id uuid PRIMARY KEY,
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  status text NOT NULL CHECK (status IN ('awaiting_upload', 'queued', 'processing', 'completed',
    'completed_with_errors', 'failed', 'cancelled')),
  dry_run boolean NOT NULL DEFAULT false,
  file_size_bytes bigint NOT NULL,
  storage_path text NOT NULL,
  uploaded_at timestamptz,
  upload_expires_at timestamptz NOT NULL,
  total integer NOT NULL DEFAULT 0,
  processed integer NOT NULL DEFAULT 0,
  succeeded integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  unchanged integer NOT NULL DEFAULT 0,
  error_count integer NOT NULL DEFAULT 0,
  dry_run_created integer NOT NULL DEFAULT 0,
  dry_run_updated integer NOT NULL DEFAULT 0,
  -- Where a restarted consumer picks up: committed with each batch of 100 lines.
  resume_line bigint NOT NULL DEFAULT 0,
  resume_offset bigint NOT NULL DEFAULT 0,
  failure_reason text,
  retry_of uuid REFERENCES import_jobs (id),
  created_at timestamptz NOT NULL DEFAULT now(),
  queued_at timestamptz,
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX import_jobs_catalog_idx ON import_jobs (catalog_id, created_at DESC, id DESC);
CREATE INDEX import_jobs_active_idx ON import_jobs (catalog_id)
  WHERE status IN ('awaiting_upload', 'queued', 'processing');

CREATE TABLE import_errors (
  id bigserial PRIMARY KEY,
  job_id uuid NOT NULL REFERENCES import_jobs (id) ON DELETE CASCADE,
  line_number integer NOT NULL,
  external_id text,
  error_type text NOT NULL CHECK (error_type IN ('validation', 'database', 'conflict', 'reference')),
  error_message text NOT NULL,
  raw_line text NOT NULL,
  CONSTRAINT import_errors_job_line_key UNIQUE (job_id, line_number)
);
CREATE INDEX import_errors_job_type_idx ON import_errors (job_id, error_type, line_number);

CREATE TABLE webhooks (
  id uuid PRIMARY KEY,
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  url text NOT NULL,
  events text[] NOT NULL,
  description text,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  secret text NOT NULL,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  consecutive_failures integer NOT NULL DEFAULT 0,
  disabled_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_catalog_idx ON webhooks (catalog_id, created_at, id);

CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY,
  webhook_id uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
  event_id uuid NOT NULL,
  event_type text NOT NULL,
  payload text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'exhausted')),
  attempt_count integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_deliveries_event_key UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, created_at DESC, id DESC);

CREATE TABLE webhook_attempts (
  id bigserial PRIMARY KEY,
  delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt_number integer NOT NULL,
  started_at timestamptz NOT NULL,
  status_code integer,
  duration_ms integer NOT NULL,
  error text,
  response_excerpt text
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, attempt_number);

CREATE TABLE outbox (
  id bigserial PRIMARY KEY,
  event_id uuid NOT NULL,
  topic text NOT NULL,
  key text NOT NULL,
  payload text NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz
);
CREATE INDEX outbox_unsent_idx ON outbox (id) WHERE sent_at IS NULL;
`);
    this.addSql(RATE_LIMIT_HIT);
    this.addSql(AUTHENTICATE_REQUEST);
  }

  override down(): void {
    this.addSql(`DROP FUNCTION IF EXISTS authenticate_request(text, double precision);
DROP FUNCTION IF EXISTS rate_limit_hit(text, integer, double precision);
DROP TABLE IF EXISTS outbox, webhook_attempts, webhook_deliveries, webhooks, import_errors, import_jobs,
  stock_movements, media_assets, items, brands, categories, idempotency_keys, rate_limits, api_keys, catalogs;`);
  }
}

// The sliding window: the previous minute's count weighs by how much of it still overlaps the
// last 60 s. The row lock makes check-and-count atomic across every API instance sharing the
// database (docs/design.md, "Rate limits"). A refused request is not counted, so a waiting client recovers on time.
export const RATE_LIMIT_HIT = `
CREATE FUNCTION rate_limit_hit(p_subject text, p_limit integer, p_now double precision,
  OUT allowed boolean, OUT remaining integer, OUT reset_at bigint, OUT retry_after integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  r rate_limits%ROWTYPE;
  win bigint := floor(p_now / 60)::bigint * 60;
  estimate double precision;
  wait double precision;
BEGIN
  -- Every request of a key updates the key's one counter row: waiting for the WAL flush of each
  -- of those commits would queue a key's requests behind the disk. A crash may forget the last
  -- few counts, which a rate limit can afford. Only this statement's own transaction is affected
  -- (callers run it alone); item writes keep synchronous commits.
  PERFORM set_config('synchronous_commit', 'off', true);
  INSERT INTO rate_limits (subject, window_start, count, prev_count) VALUES (p_subject, win, 0, 0)
    ON CONFLICT ON CONSTRAINT rate_limits_pkey DO NOTHING;
  SELECT * INTO r FROM rate_limits WHERE subject = p_subject FOR UPDATE;
  IF r.window_start = win - 60 THEN
    r.prev_count := r.count;
    r.count := 0;
  ELSIF r.window_start <> win THEN
    r.prev_count := 0;
    r.count := 0;
  END IF;
  estimate := r.prev_count * (60 - (p_now - win)) / 60 + r.count;
  allowed := estimate + 1 <= p_limit;
  IF allowed THEN
    r.count := r.count + 1;
    estimate := estimate + 1;
  END IF;
  UPDATE rate_limits SET window_start = win, count = r.count, prev_count = r.prev_count
    WHERE subject = p_subject;
  remaining := greatest(0, floor(p_limit - estimate))::integer;
  reset_at := win + 60;
  retry_after := 0;
  IF NOT allowed THEN
    IF r.count + 1 <= p_limit AND r.prev_count > 0 THEN
      -- Room comes back within this minute as the previous one slides out of the window.
      wait := win + 60 - 60.0 * (p_limit - r.count - 1) / r.prev_count - p_now;
    ELSE
      -- This minute alone is full: wait into the next one until it has slid far enough.
      wait := win + 60 + greatest(0, 60 - 60.0 * (p_limit - 1) / greatest(r.count, 1)) - p_now;
    END IF;
    retry_after := greatest(1, ceil(wait))::integer;
  END IF;
END
$fn$;
`;

// Authentication and the key's rate limit in one round trip on the hot path.
export const AUTHENTICATE_REQUEST = `
CREATE FUNCTION authenticate_request(p_key_hash text, p_now double precision)
RETURNS TABLE (key_id uuid, catalog_id uuid, scopes text[], tier text, revoked boolean,
               allowed boolean, rate_limit integer, remaining integer, reset_at bigint, retry_after integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  k api_keys%ROWTYPE;
  lim integer;
  hit record;
BEGIN
  SELECT * INTO k FROM api_keys a WHERE a.key_hash = p_key_hash;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF k.revoked_at IS NOT NULL THEN
    RETURN QUERY SELECT k.id, k.catalog_id, k.scopes, k.tier, true, false, 0, 0, 0::bigint, 0;
    RETURN;
  END IF;
  -- The tiers of the spec's rate-limit table, in requests per minute, unless the operator set one.
  lim := coalesce(k.rate_limit_per_minute,
    CASE k.tier WHEN 'enterprise' THEN 10000 WHEN 'pro' THEN 1000 ELSE 100 END);
  SELECT * INTO hit FROM rate_limit_hit('key:' || k.id, lim, p_now);
  RETURN QUERY SELECT k.id, k.catalog_id, k.scopes, k.tier, false, hit.allowed, lim,
    hit.remaining, hit.reset_at, hit.retry_after;
END
$fn$;
`;
