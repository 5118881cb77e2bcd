// The W3C traceparent the spans continue and hand on, read and written as the official propagator does.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { inSpan, startTracing, traceparent } from '../../platform/tracing.ts';

// A Zipkin endpoint that takes every export and keeps nothing.
const sink = createServer((req, res) => req.resume().on('end', () => res.writeHead(202).end()));
let stop: () => Promise<void> = async () => {};

before(async () => {
  await new Promise<void>((done) => sink.listen(0, '127.0.0.1', done));
  // The exporter reads its endpoint from the process's environment, as the service's does.
  process.env.OTEL_EXPORTER_ZIPKIN_ENDPOINT = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/api/v2/spans`;
  stop = await startTracing({ OTEL_TRACES_EXPORTER: 'zipkin' }, 'test');
});
after(async () => {
  await stop();
  sink.close();
});

/** The trace id and flags the official propagator reads from a header, or undefined for none. */
function official(header: string): { traceId: string; sampled: boolean } | undefined {
  const context = trace.getSpanContext(new W3CTraceContextPropagator().extract(ROOT_CONTEXT, { traceparent: header }, {
    get: (carrier, key) => (carrier as Record<string, string>)[key], keys: (carrier) => Object.keys(carrier as object),
  }));
  return context && { traceId: context.traceId, sampled: (context.traceFlags & 1) === 1 };
}

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const HEADERS = [
  `00-${TRACE}-b7ad6b7169203331-01`,
  `00-${TRACE}-b7ad6b7169203331-00`,
  ` 00-${TRACE}-b7ad6b7169203331-01 `,
  `01-${TRACE}-b7ad6b7169203331-01-what-a-later-version-adds`,
  `00-${TRACE}-b7ad6b7169203331-01-extra`,
  `ff-${TRACE}-b7ad6b7169203331-01`,
  `00-${'0'.repeat(32)}-b7ad6b7169203331-01`,
  `00-${TRACE}-${'0'.repeat(16)}-01`,
  `00-${TRACE.toUpperCase()}-b7ad6b7169203331-01`,
  'not a traceparent',
];

test('a span continues the trace of a traceparent exactly when the official propagator reads one from it', async () => {
  for (const header of HEADERS) {
    const handedOn = await inSpan('continued', { parent: header }, async () => traceparent());
    const [version, traceId, spanId, flags] = handedOn!.split('-');
    const read = official(header);
    assert.equal(version, '00', header);
    assert.equal(spanId!.length, 16, header);
    if (read) {
      assert.equal(traceId, read.traceId, `continues ${header}`);
      // The default sampler follows the parent's decision.
      assert.equal(flags, read.sampled ? '01' : '00', header);
    } else {
      assert.notEqual(traceId, TRACE, `starts a new trace for ${header}`);
    }
  }
});

test('the traceparent handed on names the span current, or the span given', async () => {
  await inSpan('outer', { parent: null }, async (outer) => {
    const own = traceparent();
    assert.equal(own, `00-${outer!.spanContext().traceId}-${outer!.spanContext().spanId}-01`);
    await inSpan('inner', {}, async (inner) => {
      assert.equal(traceparent(), `00-${outer!.spanContext().traceId}-${inner!.spanContext().spanId}-01`);
      assert.equal(traceparent(outer), own);
    });
  });
  assert.equal(traceparent(), undefined, 'no span, no traceparent');
});
