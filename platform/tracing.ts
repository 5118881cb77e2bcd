// OpenTelemetry traces: off unless the standard OTEL_* variables name an exporter, and then the SDK is loaded (docs/operations.md, "Traces").
import type { Span, Tracer } from '@opentelemetry/api';
import { detached } from './async-context.ts';

type Api = typeof import('@opentelemetry/api');
type Env = Record<string, string | undefined>;
export type { Span };

/** The SDK once started: everything here does nothing, and costs a test of this, until then. */
let otel: { api: Api; tracer: Tracer; shutdown: () => Promise<void> } | undefined;

export type TraceExporter = 'otlp' | 'zipkin';

/**
 * The exporter the environment asks for, or undefined when traces are off: OTEL_TRACES_EXPORTER
 * (`otlp`, `zipkin`, `none`) or, without it, an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). OTEL_SDK_DISABLED=true turns them off whatever else is set.
 */
export function traceExporterOf(env: Env): TraceExporter | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const named = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (named === 'none') return undefined;
  if (named === 'otlp' || named === 'zipkin') return named;
  if (named) throw new Error(`OTEL_TRACES_EXPORTER must be otlp, zipkin or none, got "${env.OTEL_TRACES_EXPORTER}"`);
  return env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? 'otlp' : undefined;
}

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/**
 * OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL: `http/protobuf` by
 * default, as the specification says, and about a third of JSON's bytes; `http/json` for a receiver
 * that takes only JSON. gRPC is not bundled.
 */
export function otlpProtocolOf(env: Env): OtlpProtocol {
  const named = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim().toLowerCase();
  if (named === 'http/protobuf' || named === 'http/json') return named;
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (gRPC is not bundled), got "${named}"`);
}

/** OTEL_TRACES_SAMPLER (and _ARG): always_on, always_off, traceidratio, or parentbased_ each (the default, parentbased_always_on). */
function samplerOf(env: Env, sdk: typeof import('@opentelemetry/sdk-trace')) {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on';
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? 1);
  const base = name.replace(/^parentbased_/, '');
  const root = base === 'always_off' ? new sdk.AlwaysOffSampler()
    : base === 'traceidratio' ? new sdk.TraceIdRatioBasedSampler(Number.isFinite(ratio) ? ratio : 1)
      : base === 'always_on' ? new sdk.AlwaysOnSampler() : undefined;
  if (!root) throw new Error(`OTEL_TRACES_SAMPLER must be always_on, always_off, traceidratio or parentbased_ one of them, got "${name}"`);
  return name.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root;
}

/**
 * Starts the SDK when the environment configures an exporter; resolves with the function that
 * flushes and stops it. The packages load in the root context (docs/design.md, "Async context").
 * OTEL_SERVICE_NAME names the process in the traces, `catalog-<role>` by default.
 */
export async function startTracing(env: Env, role: string): Promise<() => Promise<void>> {
  const exporterName = traceExporterOf(env);
  if (!exporterName || otel) return async () => {};
  const protocol = exporterName === 'otlp' ? otlpProtocolOf(env) : undefined;
  const [api, sdk, core, hooks, resources, exporter] = await detached(() => Promise.all([
    import('@opentelemetry/api'), import('@opentelemetry/sdk-trace'), import('@opentelemetry/core'),
    import('@opentelemetry/context-async-hooks'), import('@opentelemetry/resources'),
    exporterName === 'zipkin'
      ? import('@opentelemetry/exporter-zipkin').then((m) => new m.ZipkinExporter())
      : protocol === 'http/json'
        ? import('@opentelemetry/exporter-trace-otlp-http').then((m) => new m.OTLPTraceExporter())
        : import('@opentelemetry/exporter-trace-otlp-proto').then((m) => new m.OTLPTraceExporter()),
  ]));
  api.context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  const provider = new sdk.TracerProvider({
    resource: resources.defaultResource().merge(resources.resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME || `catalog-${role}`, 'service.instance.id': `${process.pid}`,
    })),
    sampler: samplerOf(env, sdk),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter, scheduledDelayMillis: Number(env.OTEL_BSP_SCHEDULE_DELAY) || 5000 })],
  });
  api.trace.setGlobalTracerProvider(provider);
  const shutdown = async () => {
    otel = undefined;
    await provider.shutdown();
    api.trace.disable();
    api.propagation.disable();
    api.context.disable();
  };
  otel = { api, tracer: provider.getTracer('catalog-service'), shutdown };
  return shutdown;
}

export const tracingOn = (): boolean => otel !== undefined;

export type SpanKindName = 'server' | 'client' | 'producer' | 'consumer' | 'internal';
export type Attributes = Record<string, string | number | boolean | undefined>;

export interface SpanOptions {
  readonly kind?: SpanKindName;
  readonly attributes?: Attributes;
  /**
   * The parent: a W3C traceparent (from a header, an outbox record, a delivery row), null for
   * none (a new trace), absent for the span current where `inSpan` is called.
   */
  readonly parent?: string | null;
  /** Only as a child: with no span current (and no `parent`), `work` runs without one. */
  readonly childOnly?: boolean;
  /** Traces this span works for without being their child (a relay claim's records), as traceparents. */
  readonly links?: ReadonlyArray<string | null>;
}

/** The context a span starts in, and its start options; undefined when it is not to start. */
function begin(options: SpanOptions) {
  if (!otel) return undefined;
  const { api } = otel;
  const parent = options.parent === undefined ? api.context.active() : options.parent === null ? api.ROOT_CONTEXT : contextOf(api, options.parent);
  if (options.childOnly && api.trace.getSpan(parent) === undefined) return undefined;
  const links = options.links?.flatMap((tp) => {
    const linked = tp ? spanContextOf(tp) : undefined;
    return linked ? [{ context: linked }] : [];
  });
  return { parent, start: { kind: SPAN_KINDS[options.kind ?? 'internal'], attributes: clean(options.attributes), ...(links ? { links } : {}) } };
}

// The values of the API's SpanKind enum, which is only loaded with traces on.
const SPAN_KINDS: Record<SpanKindName, number> = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 };

// A W3C traceparent (https://www.w3.org/TR/trace-context/#traceparent-header): version 00, or a
// later one read as 00 (its extra fields ignored), never ff. Made and read here rather than through
// the propagation API: several times a request, at a fraction of its cost.
const TRACEPARENT = /^\s?(?!ff)([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\s?$/;
const INVALID_TRACE_ID = '0'.repeat(32);
const INVALID_SPAN_ID = '0'.repeat(16);

/** The remote span context a traceparent names, or undefined when it is not a valid one. */
function spanContextOf(tp: string) {
  const [, version, traceId, spanId, flags, rest] = TRACEPARENT.exec(tp) ?? [];
  if (!traceId || !spanId || (version === '00' && rest) || traceId === INVALID_TRACE_ID || spanId === INVALID_SPAN_ID) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags!, 16) & 1, isRemote: true };
}

/** A context whose span is the one `tp` names (the root context when it names none). */
function contextOf(api: Api, tp: string) {
  const context = spanContextOf(tp);
  return context ? api.trace.setSpanContext(api.ROOT_CONTEXT, context) : api.ROOT_CONTEXT;
}

/** A span that the caller ends (`span.end()`), not made current: one of many at once (a Kafka send's records). */
export function startSpan(name: string, options: SpanOptions): Span | undefined {
  const begun = begin(options);
  return begun && otel!.tracer.startSpan(name, begun.start, begun.parent);
}

/** The spans of `spanPerGroup`: each once, to end (or fail); and each item's trace context, to hand on. */
export interface GroupSpans {
  readonly spans: readonly Span[];
  readonly traceparents: ReadonlyArray<string | undefined>;
}

/**
 * One span for each group of `items` (`groupOf` gives its key; undefined: no span), shared by the
 * group's items, and `start`ed from the group's first item and size: the records one change wrote
 * (an import batch's lines) make one span where they are sent or read together, not one each.
 */
export function spanPerGroup<T>(
  items: readonly T[], groupOf: (item: T) => string | undefined, start: (first: T, count: number) => Span | undefined,
): GroupSpans {
  if (!otel) return { spans: [], traceparents: items.map(() => undefined) };
  const keys = items.map(groupOf);
  const groups = Map.groupBy(items.keys().filter((i) => keys[i] !== undefined), (i) => keys[i]!);
  const started = new Map([...groups].map(([key, positions]) => {
    const span = start(items[positions[0]!]!, positions.length);
    return [key, { span, traceparent: span && traceparent(span) }];
  }));
  return {
    spans: [...started.values()].flatMap(({ span }) => (span ? [span] : [])),
    traceparents: keys.map((key) => (key === undefined ? undefined : started.get(key)?.traceparent)),
  };
}

/**
 * Runs `work` in a new span that ends when it settles (an error is recorded on it and thrown
 * on). Traces off, it is `work(undefined)`.
 */
export function inSpan<T>(name: string, options: SpanOptions, work: (span: Span | undefined) => Promise<T>): Promise<T> {
  const begun = begin(options);
  if (!begun) return work(undefined);
  const { api, tracer } = otel!;
  return tracer.startActiveSpan(name, begun.start, begun.parent, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: (error as Error)?.message });
      throw error;
    } finally {
      span.end();
    }
  });
}

function clean(attributes: Attributes | undefined): Record<string, string | number | boolean> | undefined {
  if (!attributes || !Object.values(attributes).includes(undefined)) return attributes as Record<string, string | number | boolean> | undefined;
  return Object.fromEntries(Object.entries(attributes).filter((entry): entry is [string, string | number | boolean] => entry[1] !== undefined));
}

/** Marks a span failed without an exception (a webhook receiver's 500, a refused image). */
export function failSpan(span: Span | undefined, message: string): void {
  if (span && otel) span.setStatus({ code: otel.api.SpanStatusCode.ERROR, message });
}

/** A Kafka header's text (kafkajs gives a Buffer, or an array when repeated); undefined when absent. */
export function headerText(value: Buffer | string | ReadonlyArray<Buffer | string> | undefined): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : String(first);
}

/** The W3C traceparent of `span`, or of the span current here; undefined with traces off or no span. */
export function traceparent(span?: Span): string | undefined {
  if (!otel) return undefined;
  const context = (span ?? otel.api.trace.getActiveSpan())?.spanContext();
  if (!context || context.traceId === INVALID_TRACE_ID || context.spanId === INVALID_SPAN_ID) return undefined;
  return `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}`;
}
