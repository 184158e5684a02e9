// Prometheus metrics. Each app gets its own registry so that several instances in one process
// (tests) never collide.
import client from 'prom-client';

export interface Metrics {
  registry: client.Registry;
  httpRequests: client.Counter<'method' | 'route' | 'status'>;
  httpDuration: client.Histogram<'method' | 'route'>;
  /** Adds a gauge whose value is read when /metrics is scraped. */
  addGauge(name: string, help: string, labelNames: string[], collect: () => Promise<Array<{ labels: Record<string, string>; value: number }>>): void;
}

export function createMetrics(): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'corridor_' });
  const httpRequests = new client.Counter({
    name: 'corridor_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new client.Histogram({
    name: 'corridor_http_request_duration_seconds',
    help: 'Time from request received to response sent, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  return {
    registry,
    httpRequests,
    httpDuration,
    addGauge(name, help, labelNames, collect) {
      new client.Gauge({
        name,
        help,
        labelNames,
        registers: [registry],
        async collect() {
          this.reset();
          try {
            for (const sample of await collect()) this.set(sample.labels, sample.value);
          } catch {
            // A scrape during a database outage reports what it can; /health says the rest.
          }
        },
      });
    },
  };
}
