// The trace settings read from the standard OTEL_* variables: which exporter, and which OTLP protocol.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { otlpProtocolOf, traceExporterOf } from '../../platform/tracing.ts';

test('traces are off unless an exporter or an OTLP endpoint is named, and OTEL_SDK_DISABLED wins', () => {
  assert.equal(traceExporterOf({}), undefined);
  assert.equal(traceExporterOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), 'otlp');
  assert.equal(traceExporterOf({ OTEL_TRACES_EXPORTER: 'zipkin' }), 'zipkin');
  assert.equal(traceExporterOf({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), undefined);
  assert.equal(traceExporterOf({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }), undefined);
  assert.throws(() => traceExporterOf({ OTEL_TRACES_EXPORTER: 'jaeger' }), /must be otlp, zipkin or none/);
});

test('OTLP goes as protobuf unless http/json is asked for; the traces variable wins over the general one; gRPC is refused by name', () => {
  assert.equal(otlpProtocolOf({}), 'http/protobuf');
  assert.equal(otlpProtocolOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), 'http/json');
  assert.equal(otlpProtocolOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }), 'http/protobuf');
  assert.throws(() => otlpProtocolOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), /http\/protobuf or http\/json \(gRPC is not bundled\), got "grpc"/);
});
