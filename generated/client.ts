/**
 * Catalog Service API
 * 1.0.0
 * DO NOT MODIFY - This file has been generated using oazapfts.
 * Regenerate with `npm run generate` (scripts/generate-client.ts); CI runs `npm run check:generated`.
 * See https://www.npmjs.com/package/oazapfts
 */
import * as Oazapfts from "@oazapfts/runtime";
import * as QS from "@oazapfts/runtime/query";
export const defaults: Oazapfts.Defaults<Oazapfts.CustomHeaders> = {
    headers: {},
    baseUrl: "https://catalog.example.com/api/v1/catalog"
};
const oazapfts = Oazapfts.runtime(defaults);
export const servers = {
    production: "https://catalog.example.com/api/v1/catalog",
    staging: "https://staging.catalog.example.com/api/v1/catalog",
    localDevelopment: "http://127.0.0.1:8080/api/v1/catalog"
};
export type ErrorCode = "validation_error" | "bad_request" | "unauthorized" | "forbidden" | "not_found" | "method_not_allowed" | "request_timeout" | "conflict" | "payload_too_large" | "unsupported_media_type" | "unprocessable" | "too_many_requests" | "request_header_fields_too_large" | "not_implemented" | "service_unavailable" | "error";
export type ErrorDetail = {
    /** Dot-separated path of the field (`media.0.url`; `items.3.sku` in bulk upsert; `imports` for the concurrency limit). */
    path: string;
    /** What is wrong with it. */
    message: string;
};
export type ErrorResponse = {
    /** Always `false` on an error response. */
    success: boolean;
    error: {
        code: ErrorCode;
        /** Human-readable description; not meant for parsing. */
        message: string;
        /** Per-field problems (validation errors, some conflicts). */
        details?: ErrorDetail[];
        /** Only on 429 and 503; seconds to wait, equal to the `Retry-After` header. */
        retryAfter?: number;
        /** The request id (same as `X-Request-Id`). */
        requestId?: string;
    };
};
export type SuccessFlag = boolean;
export type ExternalSystem = string;
export type ExternalId = string;
export type ItemCategory = {
    id: string;
    name: string;
};
export type ItemBrand = {
    id: string;
    name: string;
};
export type MediaRole = "primary" | "gallery";
export type MediaStatus = "pending" | "ingested" | "failed";
export type MediaRendition = {
    /** The rendition's name in `MEDIA_RENDITIONS` (by default `thumb` and `medium`). */
    name: string;
    /** The box it fits inside, in pixels on each side (never enlarged). */
    size: number;
    contentType: "image/webp";
    width: number;
    height: number;
    byteSize: number;
    contentSha256: string;
    /** Its signed address; `null` in events. */
    storedUrl: string | null;
};
export type MediaFailureReason = "not_found" | "not_an_image" | "too_large" | "timeout" | "refused" | "undecodable" | "http_error";
export type MediaFailure = {
    reason: MediaFailureReason;
    /** What happened, for people (the HTTP status, the detected type, …). */
    message: string;
    /** Requests made for this asset so far, retries and redirects included. */
    attempts: number;
    lastAttemptAt: string;
};
export type ItemMedia = {
    /** The URL as sent in the payload. */
    url: string;
    role: MediaRole;
    sortOrder: number;
    /** SHA-256 hex of the normalized URL; the asset's deduplication key. */
    sourceUrlHash: string;
    /** The asset (`getMediaAsset`). Always set when read through the API; `null` in the
    snapshot of the item event (and changelog record) that first names the image, whose
    asset is registered in the same transaction just after that snapshot: the image's
    `media.*` event and the records that follow carry it.
     */
    assetId: string | null;
    status: MediaStatus;
    /** Detected image type, once ingested. */
    contentType: string | null;
    width: number | null;
    height: number | null;
    byteSize: number | null;
    /** SHA-256 hex of the stored bytes (the source's bytes, unchanged); equal for two URLs serving the same image, which is then stored once. */
    contentSha256: string | null;
    /** A signed address of the stored image, for storefronts; no API key. `null` until ingested, and in events. Use it as returned (see `downloadStoredObject`). */
    storedUrl: string | null;
    /** WebP renditions of the stored image (`MEDIA_RENDITIONS`), smallest first; empty until made. */
    renditions: MediaRendition[];
    /** Why the last attempt failed, while the asset is `failed`; else `null`. */
    failure: MediaFailure | null;
};
export type ContentHash = string;
export type Item = {
    /** The service's own id (UUIDv7); for reference only. */
    serviceId: string;
    externalSystem: ExternalSystem;
    externalId: ExternalId;
    sku: string | null;
    name: string;
    description: string | null;
    price: number | null;
    cost: number | null;
    /** Kilograms. */
    weight: number | null;
    gtin13: string | null;
    /** 8 digits, without dots. */
    ncm: string | null;
    category: ItemCategory | null;
    brand: ItemBrand | null;
    tags: string[];
    /** Free-form JSON object; `null` when none. */
    metadata: {
        [key: string]: any;
    } | null;
    trackStock: boolean;
    /** Current stock (sum of movements); 0 for items that never had one. */
    onHand: number;
    media: ItemMedia[];
    contentHash: ContentHash;
    createdAt: string;
    /** Last change of content; an `unchanged` upsert does not move it. */
    updatedAt: string;
};
export type ItemList = {
    items: Item[];
    /** Cursor of the next page; `null` on the last page. */
    nextCursor: string | null;
};
export type MediaInput = {
    /** Absolute public `http` or `https` URL. It is normalized (lower-case scheme and
    host, default port and fragment removed, `utm_*`, `fbclid`, `gclid` removed, other
    query parameters sorted) and deduplicated per catalog by the SHA-256 of the
    normalized form (`sourceUrlHash`). Private, loopback and link-local addresses are
    refused at download time.
     */
    url: string;
    role?: MediaRole;
    /** Display order (ascending; ties broken by URL). When omitted, `0`. */
    sortOrder?: number;
};
export type ItemPayload = {
    externalSystem: ExternalSystem;
    externalId: ExternalId;
    /** Stock keeping unit, unique per catalog (a clash is a 409 `conflict`). */
    sku?: string | null;
    name: string;
    description?: string | null;
    /** Sale price, ≥ 0 and below 10¹² with at most 4 decimals (checked by the service). */
    price?: number | null;
    /** Cost price, ≥ 0 and below 10¹² with at most 4 decimals (checked by the service). */
    cost?: number | null;
    /** Weight in kilograms, ≥ 0 and below 10⁹. */
    weight?: number | null;
    /** GTIN-13 (EAN-13), 13 digits; the check digit is verified by the service. */
    gtin13?: string | null;
    /** Mercosur NCM code, 8 digits (`NNNNNNNN`), or dotted as `NNNN.NN.NN` (the dots are stripped); no other form. */
    ncm?: string | null;
    /** Category by name; created on first use, matched case-insensitively on the trimmed name. */
    category?: {
        name: string;
    } | null;
    /** Brand by name; created on first use, matched case-insensitively on the trimmed name. */
    brand?: {
        name: string;
    } | null;
    /** Free tags; de-duplicated and sorted for the content hash. */
    tags?: string[] | null;
    /** Free-form JSON object, at most 16 KB serialized (checked by the service). */
    metadata?: {
        [key: string]: any;
    } | null;
    /** Images; at most one with role `primary`. */
    media?: MediaInput[] | null;
    /** Whether stock movements may be recorded for the item (`createStockMovement`). When omitted, `false`. */
    trackStock?: boolean;
};
export type UpsertOutcome = "created" | "updated" | "unchanged";
export type UpsertResult = {
    outcome: UpsertOutcome;
    serviceId: string;
    contentHash: ContentHash;
    item: Item;
};
export type UpsertItemResponse = {
    success: SuccessFlag;
    data: UpsertResult;
};
export type BulkUpsertRequest = {
    /** Each element is an `ItemPayload`, checked on its own by the service (the
    operation's `x-item-payloads: items`), with every rule of `ItemPayload`: required
    `externalSystem`, `externalId` and `name`, no unknown fields, the bounds and
    formats of each field, and the service's own rules (at most 4 decimals in
    `price`/`cost`, the GTIN-13 check digit, `metadata` ≤ 16 KB serialized, at most one
    `primary` media). An element that breaks one fails alone, with status `error`,
    `errorCode: validation_error` and `details` paths prefixed with `items.<index>.`
    in its result; the others are still written. Only a body that is not an object with
    1 to 1000 `items`, each a JSON object, is a 400.
     */
    items: {
        [key: string]: any;
    }[];
};
export type BulkUpsertItemResult = {
    /** Position of the element in `items`. */
    index: number;
    /** The element's `externalId`, or `null` when it has none usable. */
    externalId: string | null;
    status: "created" | "updated" | "unchanged" | "error";
    /** When stored (not on `error`). */
    serviceId?: string;
    contentHash?: ContentHash;
    /** Only on `error`; human-readable. */
    error?: string;
    /** Only on `error`. */
    errorCode?: "validation_error" | "conflict" | "error";
    /** Only on `error`; paths prefixed with `items.<index>.`. */
    details?: ErrorDetail[];
};
export type OutcomeSummary = {
    created: number;
    updated: number;
    unchanged: number;
    failed: number;
};
export type BulkUpsertResult = {
    /** One entry per element of `items`, in the same order. */
    results: BulkUpsertItemResult[];
    summary: OutcomeSummary;
};
export type DeleteItemResult = {
    /** Always `true`. */
    deleted: boolean;
    externalSystem: ExternalSystem;
    externalId: ExternalId;
    serviceId: string;
};
export type StockReason = "receipt" | "sale" | "return" | "adjustment" | "damage" | "count";
export type StockMovementRequest = {
    /** Signed change of `onHand`, never 0. */
    quantity: number;
    reason: StockReason;
    /** Your reference (order number, receipt id…). */
    reference?: string | null;
    /** When it happened; defaults to the time of the request. */
    occurredAt?: string;
};
export type StockMovement = {
    id: string;
    quantity: number;
    reason: StockReason;
    reference: string | null;
    occurredAt: string;
    createdAt: string;
    /** The item's `onHand` right after this movement. */
    onHandAfter: number;
};
export type StockMovementCreated = {
    movement: StockMovement;
    onHand: number;
};
export type StockMovementList = {
    movements: StockMovement[];
    nextCursor: string | null;
};
export type ItemVersionSource = {
    kind: "api" | "import";
    apiKeyId?: string;
    requestId?: string;
    idempotencyKey?: string;
    restoredFromVersion?: number;
    importJobId?: string;
    lineNumber?: number;
} | null;
export type ItemVersion = {
    /** Counts the item's versions from 1; a re-created item goes on from the last one. */
    version: number;
    /** `stock` is a stock movement: it changes `onHand` alone. */
    kind: "created" | "updated" | "deleted" | "stock";
    /** When the write happened; the event it emitted carries the same time. */
    createdAt: string;
    /** The item's `contentHash` after this version (before it, for a delete). */
    contentHash: string | null;
    /** The fields this version changed, each with its value before and after (`changedFields`
    of `item.updated`, or `onHand` for a stock movement); empty for a create and a delete.
    `media`'s previous value lists its entries as sent (`url`, `role`, `sortOrder`,
    `sourceUrlHash`), without their ingestion state.
     */
    changes: {
        field: string;
        /** The value before this version. */
        previous: any;
        /** The value this version set. */
        value: any;
    }[];
    /** The item as `GET /items/{externalSystem}/{externalId}` answered after this version; for a delete, as it was deleted. */
    item: Item | null;
    source: ItemVersionSource;
    /** The event this version emitted (`item.*` or `stock.adjusted`). */
    eventId: string | null;
};
export type ItemVersionList = {
    versions: ItemVersion[];
    nextCursor: string | null;
};
export type ImportSource = {
    /** An `https` address (`http` too where the deployment allows private addresses, in
    development). Fetched behind the outbound network guard: an address that is or
    resolves to a private, loopback, link-local or metadata address is refused, and so is
    each redirect's (at most 5; the headers go only to the address's own origin). Shown
    back without its query, which may hold a credential (a presigned address's
    signature); kept whole only encrypted at rest, until the file was fetched or the job
    ended, and otherwise with each query value redacted.
     */
    url: string;
    /** Request headers for the address (e.g. `Authorization`). Kept secret: never shown back,
    never logged, and dropped once the file was fetched or the job ended.
     */
    headers?: {
        [key: string]: string;
    };
    /** When the address answers the same `ETag` (or, without one, `Last-Modified`) as the last
    completed job of this catalog from the same address — or `304` to the conditions sent
    from them — the job completes at once, without reading the file, with
    `source.unchanged: true`. When omitted, `false`.
     */
    ifChanged?: boolean;
};
export type CreateImportRequest = {
    /** Exact size in bytes of the file to upload; at most 100 MB (104857600). */
    fileSizeBytes?: number;
    source?: ImportSource;
    /** Validate and compare only; write no item. When omitted, `false`. */
    dryRun?: boolean;
};
export type ImportCreated = {
    jobId: string;
    /** Signed address to `PUT` the file to, valid for `expiresIn` seconds; no API key. Use it
    as returned (see `uploadImportFile`): its host, path and query are the service's.
     */
    uploadUrl: string;
    /** Path of the file in storage. */
    storagePath: string;
    expiresIn: 3600;
    uploadMethod: "PUT";
    contentType: "application/x-ndjson";
};
export type ImportStatus = "awaiting_upload" | "queued" | "processing" | "completed" | "completed_with_errors" | "failed" | "cancelled";
export type ImportCounts = {
    total: number;
    processed: number;
    succeeded: number;
    failed: number;
    unchanged: number;
};
export type ImportJobSource = {
    /** The address without its query (a presigned address's signature is a credential). The
    full address is kept, encrypted, only while the job may still fetch it.
     */
    url: string;
    ifChanged: boolean;
    /** The source answered as the last completed job's; the job completed without reading it. */
    unchanged: boolean;
    /** The `ETag` the source answered, once fetched. */
    etag: string | null;
    /** The `Last-Modified` the source answered, once fetched. */
    lastModified: string | null;
};
export type ImportJob = {
    /** Job id (`jobId` at creation). */
    id: string;
    status: ImportStatus;
    dryRun: boolean;
    /** `processed / total × 100`. */
    progress: number;
    counts: ImportCounts;
    /** Number of line errors (readable with `listImportErrors`). */
    errorCount: number;
    /** Declared size of the file; for a source, its size once fetched (`0` before). */
    fileSizeBytes: number;
    /** Why the job `failed` or was `cancelled`; otherwise `null`. */
    failureReason: string | null;
    /** The job whose failed lines this job re-imports; otherwise `null`. */
    retryOf: string | null;
    /** End of the upload window; `null` for retry jobs (they need no upload). */
    uploadExpiresAt: string | null;
    createdAt: string;
    startedAt: string | null;
    /** `null` until the job reaches a terminal status. */
    finishedAt: string | null;
    /** For dry runs, what the import would do; `null` for real imports and until a dry run finishes. */
    dryRunSummary: OutcomeSummary | null;
    /** Lines processed per second since the job began processing (time spent queued is no
    rate): known from the first batch processed; for a finished job, its average over the
    whole run. `null` before any line is processed.
     */
    linesPerSecond: number | null;
    /** Seconds until the job is done at `linesPerSecond`, while it is `processing` with a
    rate; `null` otherwise.
     */
    etaSeconds: number | null;
    /** Path (under the API prefix) of the job's results file (`getImportResults`), once the
    job ended; `null` before.
     */
    resultsUrl: string | null;
    /** For a job whose file the service fetches, its address; `null` for an uploaded file. */
    source: ImportJobSource | null;
    /** Path (under the API prefix) of the failed lines' original bytes
    (`getImportFailedLines`), once the job ended with line errors; `null` otherwise.
     */
    failedLinesUrl: string | null;
};
export type ImportJobResponse = {
    success: SuccessFlag;
    data: ImportJob;
};
export type ImportList = {
    imports: ImportJob[];
    nextCursor: string | null;
};
export type ImportRetryCreated = {
    /** The new job's id. */
    jobId: string;
    /** The original job. */
    retryOf: string;
    /** Path of the new job's file (the failed lines) in storage. */
    storagePath: string;
    job: ImportJob;
};
export type ImportErrorType = "validation" | "database" | "conflict" | "reference";
export type ImportLineError = {
    /** 1-based physical line of the file (empty lines count). */
    lineNumber: number;
    /** Present only when it could be read before the error. */
    externalId?: string;
    errorType: ImportErrorType;
    /** For validation, prefixed with the field path (`sku: …`). */
    errorMessage: string;
    /** The first 4 KB of the original line. */
    rawLine: string;
};
export type ImportErrorList = {
    errors: ImportLineError[];
    nextCursor: string | null;
};
export type MediaAsset = {
    assetId: string;
    /** The normalized source URL. */
    url: string;
    sourceUrlHash: string;
    status: MediaStatus;
    contentType: string | null;
    width: number | null;
    height: number | null;
    byteSize: number | null;
    contentSha256: string | null;
    /** The source's ETag as last seen, sent as `If-None-Match` on a refresh. */
    etag: string | null;
    storedUrl: string | null;
    renditions: MediaRendition[];
    /** Why the last attempt failed: while `failed`, and also for an `ingested` asset whose
    last refresh failed (it keeps serving the image it has); else `null`.
     */
    failure: MediaFailure | null;
    attempts: number;
    /** The last download or check, successful or not. */
    lastCheckedAt: string | null;
    createdAt: string;
    /** Items of this catalog whose media name the asset, by identity (the first 100). */
    items: {
        externalSystem: string;
        externalId: string;
    }[];
    /** How many items of this catalog name it. */
    itemCount: number;
};
export type EventType = "item.created" | "item.updated" | "item.deleted" | "variant.created" | "variant.updated" | "variant.deleted" | "stock.adjusted" | "media.ingested" | "media.ingestion_failed" | "import.completed" | "import.failed" | "webhook.test";
export type EventEnvelope = {
    /** Event id (also `X-Service-Event-Id` and `webhook-id`). */
    id: string;
    "type": EventType;
    catalogId: string;
    /** The resource the event is about: the `externalId` for item and stock events, the `sourceUrlHash` for media events, the `jobId` for import events, the webhook id for `webhook.test`. */
    resourceId: string;
    /** ISO 8601 with milliseconds, UTC. */
    createdAt: string;
    /** Type-specific payload. */
    data: {
        [key: string]: any;
    };
};
export type EventList = {
    events: EventEnvelope[];
    /** `null` on the last page; newer events are read later with `after` = the last event's id. */
    nextCursor: string | null;
};
export type PublishedEvent = {
    /** The event's id (its `event-id` header); `GET /events?after=` this id lists what came after it. */
    eventId: string;
    /** When its change was written (the database time of its transaction, in milliseconds), equal to its Kafka record timestamp and to that of the changelog records written with it. */
    committedAt: string;
    /** When Kafka acknowledged it. */
    publishedAt: string;
};
export type EventPublishing = {
    /** True when no change of the catalog waits to be published; every change committed before this answer is then on `catalog.events.v1` and `catalog.items.v1`. */
    caughtUp: boolean;
    /** The catalog's changes committed but not yet acknowledged by Kafka (an event and the changelog records written with it count once). */
    unpublished: number;
    /** How long the oldest unpublished change has waited, in seconds; 0 when none waits. */
    oldestUnpublishedAgeSeconds: number;
    /** Every change of the catalog committed before this answer and written before this
    instant is on Kafka: the time the oldest unpublished change was written, or this
    answer's time when none waits. Kafka record timestamps on both topics are the times
    changes were written.
     */
    publishedThrough: string;
    /** The newest event of the catalog on `catalog.events.v1`; `null` when none was published yet (or all are past the retention period). */
    lastPublished: PublishedEvent | null;
};
export type WebhookUrl = string;
export type EventSubscription = "*" | "item.created" | "item.updated" | "item.deleted" | "variant.created" | "variant.updated" | "variant.deleted" | "stock.adjusted" | "media.ingested" | "media.ingestion_failed" | "import.completed" | "import.failed" | "webhook.test";
export type WebhookFilter = {
    all?: WebhookFilter[];
    "any"?: WebhookFilter[];
    not?: WebhookFilter;
    field?: string;
    equals?: string | number | boolean | null;
    "in"?: (string | number | boolean | null)[];
    exists?: boolean;
};
export type WebhookRateLimit = {
    /** Deliveries a second (0.1 is one every 10 s). */
    perSecond: number;
    /** Attempts in flight at once at most; absent, no cap beyond the pace. */
    maxInFlight?: number;
};
export type CreateWebhookRequest = {
    url: WebhookUrl;
    /** Event types to receive, or `['*']` for all. */
    events: EventSubscription[];
    description?: string | null;
    /** Who is e-mailed when the webhook is disabled (default the catalog owner). */
    ownerEmail?: string;
    /** Only the events this filter accepts create deliveries; `null` or absent, every event of the subscribed types. */
    filter?: WebhookFilter | null;
    /** Deliver the events of each resource (an item, a media asset, an import job) in the
    order they happened: the next waits until the previous one is delivered or exhausted.
    Different resources go in parallel. Applies to the events after it is set.
     */
    ordered?: boolean;
    /** The pace of its deliveries; `null` or absent, as fast as the service can. */
    rateLimit?: WebhookRateLimit | null;
};
export type WebhookBacklog = {
    /** Pending deliveries (waiting their turn, waiting for a retry, or being attempted). */
    waiting: number;
    /** When the oldest of them was created; `null` when none waits. */
    oldestWaitingSince: string | null;
    /** No delivery is sent before this time, as the receiver answered 429 (with its `Retry-After`); `null` when not paused. */
    pausedUntil: string | null;
};
export type WebhookStatus = "active" | "disabled";
export type Webhook = {
    id: string;
    url: string;
    events: EventSubscription[];
    description: string | null;
    /** Who is e-mailed when the webhook is disabled (`null` = the catalog owner). */
    ownerEmail?: string | null;
    /** The webhook's filter, as given; `null` when it has none. */
    filter?: WebhookFilter | null;
    /** Whether each resource's events are delivered in the order they happened (see `createWebhook`). */
    ordered?: boolean;
    /** The pace its deliveries are sent at; `null` when it has none (as fast as the service can). */
    rateLimit: WebhookRateLimit | null;
    backlog: WebhookBacklog;
    status: WebhookStatus;
    /** Consecutive exhausted deliveries; reset by a success or by `resumeWebhook`. */
    consecutiveFailures: number;
    /** When a delivery to it last succeeded, to within 10 seconds (a busy endpoint's every
    success is not written down); `null` before its first.
     */
    lastSuccessAt: string | null;
    disabledAt: string | null;
    createdAt: string;
    updatedAt: string;
};
export type WebhookCreated = Webhook & {
    /** Signing secret; store it now, it is never shown again. */
    secret: string;
};
export type WebhookList = {
    webhooks: Webhook[];
    nextCursor: string | null;
};
export type WebhookResponse = {
    success: SuccessFlag;
    data: Webhook;
};
export type UpdateWebhookRequest = {
    url?: WebhookUrl;
    events?: EventSubscription[];
    description?: string | null;
    /** A new filter; `null` removes it. */
    filter?: WebhookFilter | null;
    /** Deliver the events of each resource (an item, a media asset, an import job) in the
    order they happened: the next waits until the previous one is delivered or exhausted.
    Different resources go in parallel. Applies to the events after it is set.
     */
    ordered?: boolean;
    /** A new pace, replacing the whole limit; `null` removes it. The deliveries waiting go to the new pace at once. */
    rateLimit?: WebhookRateLimit | null;
};
export type RotatedSecret = {
    /** The new secret; shown only here. */
    secret: string;
    /** Until then deliveries also carry a `v1=` signature made with the previous secret. */
    previousSecretExpiresAt: string;
};
export type RecoverWebhookRequest = {
    /** Start of the window; at most 14 days ago. */
    since: string;
    /** End of the window (exclusive); default now. */
    until?: string;
};
export type DeliveryStatus = "pending" | "succeeded" | "exhausted";
export type WebhookDelivery = {
    /** The delivery id (`deliveryId`). */
    id: string;
    webhookId: string;
    eventId: string;
    eventType: EventType;
    status: DeliveryStatus;
    attemptCount: number;
    /** When the next attempt is due; `null` unless `pending`, and while the webhook is disabled (paused until `resumeWebhook`). */
    nextAttemptAt: string | null;
    /** HTTP status of the last attempt; `null` when there was no answer (or no attempt yet). */
    lastStatusCode: number | null;
    lastError: string | null;
    createdAt: string;
    updatedAt: string;
};
export type WebhookDeliveryList = {
    deliveries: WebhookDelivery[];
    nextCursor: string | null;
};
export type DeliveryAttempt = {
    /** Which of the 8 attempts it was; a throttled attempt's number is used again by the next. */
    attemptNumber: number;
    /** The receiver answered 429; the attempt is sent again after its `Retry-After` and did not count as one of the 8. */
    throttled: boolean;
    startedAt: string;
    /** `null` when no answer arrived (timeout, refused connection, blocked address). */
    statusCode: number | null;
    durationMs: number;
    /** Why the attempt failed; `null` on success. */
    error: string | null;
    /** The first 4 KB of the response body. */
    responseBodyExcerpt: string | null;
};
export type WebhookDeliveryDetail = WebhookDelivery & {
    /** The event this delivery carries, in the event log (`GET /events/{eventId}`), while
    it is kept; `null` for a `webhook.test` ping, which is sent to one webhook only and
    is not a catalog event.
     */
    eventUrl: string | null;
    /** The request body of every attempt, byte for byte as sent (the event's JSON, the
    same bytes as on Kafka `catalog.events.v1`): what the signature covers.
     */
    body: string;
    attempts: DeliveryAttempt[];
};
export type CredentialKind = "key" | "console";
export type Scope = "catalog:read" | "catalog:write" | "bulk_import:manage" | "webhooks:manage" | "stock:write" | "keys:manage" | "audit:read" | "admin";
export type Access = {
    catalogId: string;
    catalogName: string;
    /** The key's id, or the console session's. */
    keyId: string;
    kind: CredentialKind;
    scopes: Scope[];
    /** When the credential stops working; `null` for a key without an end. */
    expiresAt: string | null;
    /** Who or what it is for, as its issuer wrote it. */
    label: string | null;
};
export type Cidr = string;
export type ApiKey = {
    id: string;
    /** The key's first 13 characters, to tell keys apart (`cat_live_3kTM`). */
    prefix: string;
    scopes: Scope[];
    tier: "free" | "pro" | "enterprise";
    /** The key's own requests per minute, set by the operator; `null`: its tier's. */
    rateLimitPerMinute: number | null;
    label: string | null;
    createdAt: string;
    /** When the key stops working; `null`: never. */
    expiresAt: string | null;
    revokedAt: string | null;
    /** When the key last authenticated a request, to the minute: it is recorded at most
    once a minute per key. `null`: never used.
     */
    lastUsedAt: string | null;
    /** The client addresses the key may be used from; a request from any other is a 403
    `forbidden`. `null`: any address. Behind a load balancer the client address is the
    one `TRUST_PROXY_HOPS` picks from `X-Forwarded-For` (docs/rest-api.md, "Keys with limits").
     */
    allowedCidrs: Cidr[] | null;
};
export type ApiKeyList = {
    keys: ApiKey[];
    /** `null` on the last page. */
    nextCursor: string | null;
};
export type CreateApiKeyRequest = {
    /** Among the caller's own scopes, never `admin` (403 otherwise). */
    scopes: Scope[];
    /** Who or what the key is for. */
    label?: string;
    /** When the key stops working (in the future); without it, never. */
    expiresAt?: string;
    /** The client addresses the key may be used from; without it, any. */
    allowedCidrs?: Cidr[];
};
export type ApiKeyCreated = ApiKey & {
    /** The key; store it now, it is never shown again. */
    key: string;
};
export type UpdateApiKeyRequest = {
    /** The client addresses the key may be used from; `null`: any. */
    allowedCidrs?: Cidr[] | null;
    /** When the key stops working, in the future; `null`: never. */
    expiresAt?: string | null;
};
export type RedeemConsoleLinkRequest = {
    /** The link's token, the `link=` value of its URL's fragment (`cl_…`). */
    link: string;
};
export type CatalogScope = "catalog:read" | "catalog:write" | "bulk_import:manage" | "webhooks:manage" | "stock:write" | "keys:manage" | "audit:read";
export type ConsoleSession = {
    /** The session's credential, for `Authorization: Bearer`; shown only here. */
    token: string;
    /** The link's id (`listConsoleSessions`, `revokeConsoleSession`). */
    id: string;
    catalogId: string;
    catalogName: string;
    scopes: CatalogScope[];
    expiresAt: string;
};
export type ConsoleSessionState = "pending" | "active" | "expired" | "revoked";
export type ConsoleSessionRecord = {
    id: string;
    catalogId: string;
    catalogName: string;
    scopes: CatalogScope[];
    label: string | null;
    state: ConsoleSessionState;
    redeemBy: string;
    redeemedAt: string | null;
    /** When the session ends; `null` until the link is redeemed. */
    expiresAt: string | null;
    revokedAt: string | null;
    createdAt: string;
};
export type AuditActor = {
    kind: "key" | "console" | "cli" | "service";
    keyId: string | null;
    keyPrefix: string | null;
    label: string | null;
    /** For `cli`: `user@host`. */
    operator: string | null;
};
export type AuditSetting = {
    [key: string]: any;
};
export type AuditEntry = {
    id: string;
    /** When the action's transaction ran. */
    at: string;
    /** `<resource type>.<what happened>`; the list is in `listAuditLog`, and grows within v1. */
    action: string;
    actor: AuditActor;
    /** The `X-Request-Id` of the request that made the change; for the CLI, one id per command run; `null` for the service's own. */
    requestId: string | null;
    /** The client's address as the service saw it (see `ApiKey.allowedCidrs` for proxies); `null` for the CLI and the service. */
    clientAddress: string | null;
    resource: {
        "type": string;
        id: string;
    };
    /** The resource's setting before the action, as the API shows it (never a secret); `null` before a creation. */
    before: AuditSetting | null;
    /** The resource's setting after the action; `null` after a deletion. */
    after: AuditSetting | null;
};
export type AuditLogPage = {
    entries: AuditEntry[];
    /** `null` on the last page; otherwise the cursor to older entries. */
    nextCursor: string | null;
};
export type ParkedRecord = {
    /** The parked record's id. */
    id: string;
    /** The record's `event-id` header: for an event, its id. */
    eventId: string;
    /** The topic it was for, without the deployment's prefix. */
    topic: string;
    /** Its Kafka key. */
    key: string;
    /** The event's type; `null` for a work message. */
    eventType: string | null;
    /** The catalog of an event; `null` for a work message. */
    catalogId: string | null;
    /** The broker's error, e.g. `MESSAGE_TOO_LARGE`. */
    errorType: string;
    /** The broker's answer in words. */
    reason: string;
    /** The record's value in bytes. */
    byteSize: number;
    parkedAt: string;
    /** When an operator sent it again; `null` while it waits. */
    resentAt: string | null;
};
export type ParkedRecordList = {
    records: ParkedRecord[];
    /** `null` on the last page. */
    nextCursor: string | null;
};
export type CreateConsoleLinkRequest = {
    /** The catalog's name or id. */
    catalog: string;
    /** What the session may do. */
    scopes: CatalogScope[];
    /** How long the link can be redeemed. */
    redeemWithinMinutes?: number;
    /** How long the session lasts once the link is redeemed. */
    sessionMinutes?: number;
    /** Who the link is for. */
    label?: string;
};
export type ConsoleLink = {
    /** The link's id, also its session's in `listConsoleSessions`. */
    id: string;
    catalogId: string;
    catalogName: string;
    scopes: CatalogScope[];
    label: string | null;
    /** The console's address with the single-use token in its fragment
    (`…/console/#link=cl_…`); shown only here.
     */
    url: string;
    redeemBy: string;
    sessionMinutes: number;
    createdAt: string;
};
export type ConsoleSessionList = {
    sessions: ConsoleSessionRecord[];
    /** `null` on the last page. */
    nextCursor: string | null;
};
/**
 * Get this OpenAPI document
 */
export function getOpenApi(opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            openapi: "3.1.0";
            info: {
                [key: string]: any;
            };
            paths: {
                [key: string]: any;
            };
            [key: string]: any;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/openapi.json", {
        ...opts
    });
}
/**
 * Get the AsyncAPI document of the Kafka topics
 */
export function getAsyncApi(opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            asyncapi: "3.0.0";
            info: {
                [key: string]: any;
            };
            channels: {
                [key: string]: any;
            };
            [key: string]: any;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/asyncapi.json", {
        ...opts
    });
}
/**
 * List items
 */
export function listItems({ limit, cursor, updatedSince, sku, category, brand, tag, sourceUrlHash }: {
    limit?: number;
    cursor?: string;
    updatedSince?: string;
    sku?: string;
    category?: string;
    brand?: string;
    tag?: string;
    sourceUrlHash?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ItemList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/items${QS.query(QS.explode({
        limit,
        cursor,
        updatedSince,
        sku,
        category,
        brand,
        tag,
        sourceUrlHash
    }))}`, {
        ...opts
    });
}
/**
 * Create or update an item (idempotent)
 */
export function upsertItem(itemPayload: ItemPayload, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: UpsertItemResponse;
    } | {
        status: 201;
        data: UpsertItemResponse;
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/items/upsert", oazapfts.json({
        ...opts,
        method: "POST",
        body: itemPayload
    }));
}
/**
 * Upsert up to 1000 items in one call
 */
export function bulkUpsertItems(bulkUpsertRequest: BulkUpsertRequest, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: BulkUpsertResult;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/items/bulk-upsert", oazapfts.json({
        ...opts,
        method: "POST",
        body: bulkUpsertRequest
    }));
}
/**
 * Export every item as JSONL
 */
export function exportItems({ updatedSince }: {
    updatedSince?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchText(`/items/export${QS.query(QS.explode({
        updatedSince
    }))}`, {
        ...opts
    });
}
/**
 * Get an item by its external identity
 */
export function getItem(externalSystem: ExternalSystem, externalId: ExternalId, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: Item;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/items/${encodeURIComponent(externalSystem)}/${encodeURIComponent(externalId)}`, {
        ...opts
    });
}
/**
 * Delete an item (destructive)
 */
export function deleteItem(externalSystem: ExternalSystem, externalId: ExternalId, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: DeleteItemResult;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/items/${encodeURIComponent(externalSystem)}/${encodeURIComponent(externalId)}`, {
        ...opts,
        method: "DELETE"
    });
}
/**
 * Record a stock movement
 */
export function createStockMovement(externalSystem: ExternalSystem, externalId: ExternalId, stockMovementRequest: StockMovementRequest, { idempotencyKey }: {
    idempotencyKey?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 201;
        data: {
            success: SuccessFlag;
            data: StockMovementCreated;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 422;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/items/${encodeURIComponent(externalSystem)}/${encodeURIComponent(externalId)}/stock-movements`, oazapfts.json({
        ...opts,
        method: "POST",
        body: stockMovementRequest,
        headers: oazapfts.mergeHeaders(opts?.headers, {
            "Idempotency-Key": idempotencyKey
        })
    }));
}
/**
 * List an item's stock movements
 */
export function listStockMovements(externalSystem: ExternalSystem, externalId: ExternalId, { limit, cursor }: {
    limit?: number;
    cursor?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: StockMovementList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/items/${encodeURIComponent(externalSystem)}/${encodeURIComponent(externalId)}/stock-movements${QS.query(QS.explode({
        limit,
        cursor
    }))}`, {
        ...opts
    });
}
/**
 * List an item's versions (who changed what, when, from what)
 */
export function listItemVersions(externalSystem: ExternalSystem, externalId: ExternalId, { limit, cursor }: {
    limit?: number;
    cursor?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ItemVersionList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/items/${encodeURIComponent(externalSystem)}/${encodeURIComponent(externalId)}/versions${QS.query(QS.explode({
        limit,
        cursor
    }))}`, {
        ...opts
    });
}
/**
 * Restore an item to one of its versions
 */
export function restoreItemVersion(externalSystem: ExternalSystem, externalId: ExternalId, version: number, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: UpsertItemResponse;
    } | {
        status: 201;
        data: UpsertItemResponse;
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 422;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/items/${encodeURIComponent(externalSystem)}/${encodeURIComponent(externalId)}/versions/${encodeURIComponent(version)}/restore`, {
        ...opts,
        method: "POST"
    });
}
/**
 * Create an import job and get a signed upload address
 */
export function createImport(createImportRequest: CreateImportRequest, { idempotencyKey }: {
    idempotencyKey?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 201;
        data: {
            success: SuccessFlag;
            data: ImportCreated;
        };
    } | {
        status: 202;
        data: ImportJobResponse;
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/imports", oazapfts.json({
        ...opts,
        method: "POST",
        body: createImportRequest,
        headers: oazapfts.mergeHeaders(opts?.headers, {
            "Idempotency-Key": idempotencyKey
        })
    }));
}
/**
 * List import jobs
 */
export function listImports({ limit, cursor, status }: {
    limit?: number;
    cursor?: string;
    status?: ImportStatus;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ImportList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/imports${QS.query(QS.explode({
        limit,
        cursor,
        status
    }))}`, {
        ...opts
    });
}
/**
 * Get an import job (poll its progress)
 */
export function getImport(jobId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: ImportJobResponse;
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/imports/${encodeURIComponent(jobId)}`, {
        ...opts
    });
}
/**
 * Start processing an uploaded file
 */
export function startImport(jobId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 202;
        data: ImportJobResponse;
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/imports/${encodeURIComponent(jobId)}/start`, {
        ...opts,
        method: "POST"
    });
}
/**
 * Cancel an import job
 */
export function cancelImport(jobId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: ImportJobResponse;
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/imports/${encodeURIComponent(jobId)}/cancel`, {
        ...opts,
        method: "POST"
    });
}
/**
 * Re-import only the failed lines of a finished job
 */
export function retryImport(jobId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 201;
        data: {
            success: SuccessFlag;
            data: ImportRetryCreated;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/imports/${encodeURIComponent(jobId)}/retry`, {
        ...opts,
        method: "POST"
    });
}
/**
 * List the per-line errors of an import job
 */
export function listImportErrors(jobId: string, { errorType, limit, cursor }: {
    errorType?: ImportErrorType;
    limit?: number;
    cursor?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ImportErrorList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/imports/${encodeURIComponent(jobId)}/errors${QS.query(QS.explode({
        errorType,
        limit,
        cursor
    }))}`, {
        ...opts
    });
}
/**
 * Download every line's outcome (the results file)
 */
export function getImportResults(jobId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchText(`/imports/${encodeURIComponent(jobId)}/results`, {
        ...opts
    });
}
/**
 * Download the failed lines' original bytes
 */
export function getImportFailedLines(jobId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchText(`/imports/${encodeURIComponent(jobId)}/failed-lines`, {
        ...opts
    });
}
/**
 * Read an image asset
 */
export function getMediaAsset(assetId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: MediaAsset;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/media/${encodeURIComponent(assetId)}`, {
        ...opts
    });
}
/**
 * Check an image's source again now
 */
export function refreshMediaAsset(assetId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 202;
        data: {
            success: SuccessFlag;
            data: MediaAsset;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/media/${encodeURIComponent(assetId)}/refresh`, {
        ...opts,
        method: "POST"
    });
}
/**
 * List the catalog's events
 */
export function listEvents({ limit, cursor, after, $type, resourceId, since, until, order }: {
    limit?: number;
    cursor?: string;
    after?: string;
    $type?: EventType;
    resourceId?: string;
    since?: string;
    until?: string;
    order?: "asc" | "desc";
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: EventList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/events${QS.query(QS.explode({
        limit,
        cursor,
        after,
        "type": $type,
        resourceId,
        since,
        until,
        order
    }))}`, {
        ...opts
    });
}
/**
 * How far the catalog's changes are published on Kafka
 */
export function getEventPublishing(opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: EventPublishing;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/events/publishing", {
        ...opts
    });
}
/**
 * Read one event
 */
export function getEvent(eventId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: EventEnvelope;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/events/${encodeURIComponent(eventId)}`, {
        ...opts
    });
}
/**
 * Subscribe an endpoint to events
 */
export function createWebhook(createWebhookRequest: CreateWebhookRequest, { idempotencyKey }: {
    idempotencyKey?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 201;
        data: {
            success: SuccessFlag;
            data: WebhookCreated;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/webhooks", oazapfts.json({
        ...opts,
        method: "POST",
        body: createWebhookRequest,
        headers: oazapfts.mergeHeaders(opts?.headers, {
            "Idempotency-Key": idempotencyKey
        })
    }));
}
/**
 * List webhooks
 */
export function listWebhooks({ limit, cursor }: {
    limit?: number;
    cursor?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: WebhookList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks${QS.query(QS.explode({
        limit,
        cursor
    }))}`, {
        ...opts
    });
}
/**
 * Get a webhook
 */
export function getWebhook(id: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: WebhookResponse;
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}`, {
        ...opts
    });
}
/**
 * Change a webhook's address, events, description or pace
 */
export function updateWebhook(id: string, updateWebhookRequest: UpdateWebhookRequest, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: WebhookResponse;
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}`, oazapfts.json({
        ...opts,
        method: "PATCH",
        body: updateWebhookRequest
    }));
}
/**
 * Delete a webhook
 */
export function deleteWebhook(id: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: {
                /** Always `true`. */
                deleted: boolean;
                id: string;
            };
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}`, {
        ...opts,
        method: "DELETE"
    });
}
/**
 * Rotate the signing secret
 */
export function rotateWebhookSecret(id: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: RotatedSecret;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}/rotate-secret`, {
        ...opts,
        method: "POST"
    });
}
/**
 * Re-enable a disabled webhook
 */
export function resumeWebhook(id: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: WebhookResponse;
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}/resume`, {
        ...opts,
        method: "POST"
    });
}
/**
 * Send a webhook.test event
 */
export function testWebhook(id: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 202;
        data: {
            success: SuccessFlag;
            data: {
                deliveryId: string;
                eventId: string;
            };
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}/test`, {
        ...opts,
        method: "POST"
    });
}
/**
 * Re-queue failed deliveries of a time window
 */
export function recoverWebhook(id: string, recoverWebhookRequest: RecoverWebhookRequest, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 202;
        data: {
            success: SuccessFlag;
            data: {
                requeued: number;
                /** The catalog's events of the same window in the event log (`GET /events`). */
                eventsUrl: string;
            };
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}/recover`, oazapfts.json({
        ...opts,
        method: "POST",
        body: recoverWebhookRequest
    }));
}
/**
 * List a webhook's deliveries
 */
export function listWebhookDeliveries(id: string, { status, limit, cursor }: {
    status?: DeliveryStatus;
    limit?: number;
    cursor?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: WebhookDeliveryList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}/deliveries${QS.query(QS.explode({
        status,
        limit,
        cursor
    }))}`, {
        ...opts
    });
}
/**
 * Get a delivery with every attempt
 */
export function getWebhookDelivery(id: string, deliveryId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: WebhookDeliveryDetail;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(deliveryId)}`, {
        ...opts
    });
}
/**
 * Re-queue one delivery now
 */
export function retryWebhookDelivery(id: string, deliveryId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 202;
        data: {
            success: SuccessFlag;
            data: WebhookDelivery;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(deliveryId)}/retry`, {
        ...opts,
        method: "POST"
    });
}
/**
 * Describe the calling credential
 */
export function getAccess(opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: Access;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/access", {
        ...opts
    });
}
/**
 * List the catalog's API keys
 */
export function listKeys({ limit, cursor }: {
    limit?: number;
    cursor?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ApiKeyList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/keys${QS.query(QS.explode({
        limit,
        cursor
    }))}`, {
        ...opts
    });
}
/**
 * Issue an API key for the catalog
 */
export function createKey(createApiKeyRequest: CreateApiKeyRequest, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 201;
        data: {
            success: SuccessFlag;
            data: ApiKeyCreated;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/keys", oazapfts.json({
        ...opts,
        method: "POST",
        body: createApiKeyRequest
    }));
}
/**
 * Revoke an API key
 */
export function revokeKey(keyId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ApiKey;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/keys/${encodeURIComponent(keyId)}`, {
        ...opts,
        method: "DELETE"
    });
}
/**
 * Change an API key's limits
 */
export function updateKey(keyId: string, updateApiKeyRequest: UpdateApiKeyRequest, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ApiKey;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/keys/${encodeURIComponent(keyId)}`, oazapfts.json({
        ...opts,
        method: "PATCH",
        body: updateApiKeyRequest
    }));
}
/**
 * Redeem a console link for a session
 */
export function redeemConsoleLink(redeemConsoleLinkRequest: RedeemConsoleLinkRequest, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 201;
        data: {
            success: SuccessFlag;
            data: ConsoleSession;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/console-sessions", oazapfts.json({
        ...opts,
        method: "POST",
        body: redeemConsoleLinkRequest
    }));
}
/**
 * End the calling console session
 */
export function endConsoleSession(opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ConsoleSessionRecord;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/console-sessions/current", {
        ...opts,
        method: "DELETE"
    });
}
/**
 * Read the catalog's audit log
 */
export function listAuditLog({ limit, cursor, actor, action, resourceType, resourceId, since, until }: {
    limit?: number;
    cursor?: string;
    actor?: string;
    action?: string;
    resourceType?: string;
    resourceId?: string;
    since?: string;
    until?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: AuditLogPage;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/audit-log${QS.query(QS.explode({
        limit,
        cursor,
        actor,
        action,
        resourceType,
        resourceId,
        since,
        until
    }))}`, {
        ...opts
    });
}
/**
 * List the records the broker refused for good
 */
export function listParkedRecords({ limit, cursor, catalogId, includeResent }: {
    limit?: number;
    cursor?: string;
    catalogId?: string;
    includeResent?: boolean;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ParkedRecordList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/admin/parked-records${QS.query(QS.explode({
        limit,
        cursor,
        catalogId,
        includeResent
    }))}`, {
        ...opts
    });
}
/**
 * Send a parked record again
 */
export function resendParkedRecord(recordId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 202;
        data: {
            success: SuccessFlag;
            data: ParkedRecord;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 409;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/admin/parked-records/${encodeURIComponent(recordId)}/resend`, {
        ...opts,
        method: "POST"
    });
}
/**
 * Mint a single-use console link for a catalog
 */
export function createConsoleLink(createConsoleLinkRequest: CreateConsoleLinkRequest, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 201;
        data: {
            success: SuccessFlag;
            data: ConsoleLink;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 413;
        data: ErrorResponse;
    } | {
        status: 415;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>("/admin/console-links", oazapfts.json({
        ...opts,
        method: "POST",
        body: createConsoleLinkRequest
    }));
}
/**
 * List console links and their sessions
 */
export function listConsoleSessions({ limit, cursor, catalog }: {
    limit?: number;
    cursor?: string;
    catalog?: string;
} = {}, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ConsoleSessionList;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/admin/console-sessions${QS.query(QS.explode({
        limit,
        cursor,
        catalog
    }))}`, {
        ...opts
    });
}
/**
 * Revoke a console link and its session
 */
export function revokeConsoleSession(sessionId: string, opts?: Oazapfts.RequestOpts) {
    return oazapfts.fetchJson<{
        status: 200;
        data: {
            success: SuccessFlag;
            data: ConsoleSessionRecord;
        };
    } | {
        status: 400;
        data: ErrorResponse;
    } | {
        status: 401;
        data: ErrorResponse;
    } | {
        status: 403;
        data: ErrorResponse;
    } | {
        status: 404;
        data: ErrorResponse;
    } | {
        status: 429;
        data: ErrorResponse;
    } | {
        status: 500;
        data: ErrorResponse;
    } | {
        status: 503;
        data: ErrorResponse;
    }>(`/admin/console-sessions/${encodeURIComponent(sessionId)}`, {
        ...opts,
        method: "DELETE"
    });
}
