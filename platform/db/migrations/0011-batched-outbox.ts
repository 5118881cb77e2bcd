// The batched outbox: a row holds the events (and changelog records, work messages) one transaction wrote for one topic and catalog, in order.
import { Migration } from '@mikro-orm/migrations';

// A row's events at most: a relay claim is cut at row boundaries, and a row is read whole.
const EVENTS_PER_ROW = 1000;

export class BatchedOutbox extends Migration {
  override name = '0011-batched-outbox';

  override up(): void {
    this.addSql('ALTER TABLE outbox RENAME TO outbox_unbatched;');
    this.addSql('ALTER INDEX outbox_pkey RENAME TO outbox_unbatched_pkey;');
    this.addSql('DROP INDEX outbox_unsent_idx, outbox_catalog_events_idx;');
    // The span of a row's event ids, so that the row holding an id is found by an index (GET
    // /events/{id}, and a page resuming after an id that lies inside a row).
    this.addSql('CREATE TYPE uuid_range AS RANGE (subtype = uuid);');
    this.addSql(`CREATE TABLE outbox (
      id bigserial PRIMARY KEY,
      topic text NOT NULL,
      -- A domain event's catalog (GET /events lists the row's events under it); null for work
      -- messages and changelog records.
      catalog_id uuid,
      -- Parallel arrays, one element per Kafka record, in publishing order: its event-id header,
      -- key, event-type header (null for a record that has none) and exact value bytes.
      event_ids uuid[] NOT NULL,
      keys text[] NOT NULL,
      types text[] NOT NULL,
      payloads text[] NOT NULL,
      -- How many: a claim counts records without reading the arrays.
      size int NOT NULL,
      first_event_id uuid NOT NULL,
      last_event_id uuid NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      sent_at timestamptz,
      CHECK (size BETWEEN 1 AND ${EVENTS_PER_ROW} AND cardinality(event_ids) = size AND cardinality(keys) = size
        AND cardinality(types) = size AND cardinality(payloads) = size)
    );`);
    // A row's payloads are compressed when stored (an import batch's are about 100 KB): lz4 takes
    // a fifth of the CPU of the default pglz for the same size here. Servers built without lz4 keep pglz.
    this.addSql(`DO $$ BEGIN ALTER TABLE outbox ALTER COLUMN payloads SET COMPRESSION lz4;
      EXCEPTION WHEN feature_not_supported THEN NULL; END $$;`);
    this.addSql('CREATE INDEX outbox_unsent_idx ON outbox (id) WHERE sent_at IS NULL;');
    this.addSql('CREATE INDEX outbox_catalog_events_idx ON outbox (catalog_id, first_event_id) WHERE catalog_id IS NOT NULL;');
    this.addSql(`CREATE INDEX outbox_event_span_idx ON outbox USING gist (uuid_range(first_event_id, last_event_id, '[]'))
      WHERE catalog_id IS NOT NULL;`);
    // The old rows, unsent ones included, grouped the same way and kept in order: a key's rows
    // share topic and catalog, so they stay in id order inside a group and groups follow their
    // first row. A group's sent_at is its last row's: none is deleted before its own retention.
    this.addSql(`INSERT INTO outbox (topic, catalog_id, event_ids, keys, types, payloads, size, first_event_id, last_event_id, created_at, sent_at)
      SELECT topic, catalog_id, array_agg(event_id ORDER BY id), array_agg(key ORDER BY id),
        array_agg(headers ->> 'event-type' ORDER BY id), array_agg(payload ORDER BY id), count(*),
        min(event_id::text COLLATE "C")::uuid, max(event_id::text COLLATE "C")::uuid, min(created_at), max(sent_at)
      FROM (SELECT o.*, row_number() OVER (PARTITION BY topic, catalog_id, sent_at IS NULL ORDER BY id) AS n FROM outbox_unbatched o) AS r
      GROUP BY topic, catalog_id, sent_at IS NULL, (n - 1) / ${EVENTS_PER_ROW}
      ORDER BY min(id);`);
    this.addSql('DROP TABLE outbox_unbatched;');
    // One row a record, for people and tests reading the outbox with SQL.
    this.addSql(`CREATE VIEW outbox_events AS
      SELECT o.id AS batch_id, e.ord, e.event_id, o.topic, e.key, e.payload, e.type, o.catalog_id, o.created_at, o.sent_at
        FROM outbox o, unnest(o.event_ids, o.keys, o.payloads, o.types) WITH ORDINALITY AS e(event_id, key, payload, type, ord);`);
  }

  override down(): void {
    this.addSql('DROP VIEW outbox_events;');
    this.addSql('ALTER TABLE outbox RENAME TO outbox_batched;');
    this.addSql('ALTER INDEX outbox_pkey RENAME TO outbox_batched_pkey;');
    this.addSql('DROP INDEX outbox_unsent_idx, outbox_catalog_events_idx, outbox_event_span_idx;');
    this.addSql(`CREATE TABLE outbox (
      id bigserial PRIMARY KEY, event_id uuid NOT NULL, topic text NOT NULL, key text NOT NULL, payload text NOT NULL,
      headers jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL DEFAULT now(), sent_at timestamptz, catalog_id uuid);`);
    this.addSql('CREATE INDEX outbox_unsent_idx ON outbox (id) WHERE sent_at IS NULL;');
    this.addSql('CREATE INDEX outbox_catalog_events_idx ON outbox (catalog_id, event_id) WHERE catalog_id IS NOT NULL;');
    this.addSql(`INSERT INTO outbox (event_id, topic, key, payload, headers, created_at, sent_at, catalog_id)
      SELECT e.event_id, o.topic, e.key, e.payload,
        CASE WHEN e.type IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('event-type', e.type) END, o.created_at, o.sent_at, o.catalog_id
      FROM outbox_batched o, unnest(o.event_ids, o.keys, o.payloads, o.types) WITH ORDINALITY AS e(event_id, key, payload, type, ord)
      ORDER BY o.id, e.ord;`);
    this.addSql('DROP TABLE outbox_batched;');
    this.addSql('DROP TYPE uuid_range;');
  }
}
