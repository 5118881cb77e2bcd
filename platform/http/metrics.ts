// Prometheus metrics of the process: HTTP traffic plus the default runtime metrics.
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  requests: Counter<'method' | 'operation' | 'status'>;
  duration: Histogram<'method' | 'operation'>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'catalog' });
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'catalog_http_requests_total',
    help: 'HTTP requests answered, by operation and status.',
    labelNames: ['method', 'operation', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'catalog_http_request_duration_seconds',
    help: 'Time from request to the last byte of the response.',
    labelNames: ['method', 'operation'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  return { registry, requests, duration };
}
