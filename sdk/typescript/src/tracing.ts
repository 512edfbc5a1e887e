/**
 * OpenTelemetry, when the application has it (`@opentelemetry/api`, an optional peer
 * dependency): each request carries the active context as W3C `traceparent` and `tracestate`
 * (through the application's propagator), so that the tasks it opens join the application's
 * trace; a handler runs in the context its task brought (a claimed task's `traceparent`, a push
 * delivery's headers), so that its spans, and the tasks it opens, join the call tree's trace.
 * Without the package nothing is added and nothing is read.
 */

type OpenTelemetryApi = typeof import("@opentelemetry/api");

const W3C_HEADERS = ["traceparent", "tracestate"] as const;

let loaded: Promise<OpenTelemetryApi | undefined> | undefined;

/** The application's OpenTelemetry API, or `undefined` when it has none. */
function openTelemetry(): Promise<OpenTelemetryApi | undefined> {
  loaded ??= import("@opentelemetry/api").then(
    (api) => api,
    () => undefined,
  );
  return loaded;
}

/** The active OpenTelemetry context as W3C headers; none without OpenTelemetry or a span. */
export async function outgoingTraceHeaders(): Promise<Record<string, string>> {
  const api = await openTelemetry();
  if (api === undefined) return {};
  const carrier: Record<string, string> = {};
  api.propagation.inject(api.context.active(), carrier);
  const headers: Record<string, string> = {};
  for (const name of W3C_HEADERS) {
    if (carrier[name] !== undefined) headers[name] = carrier[name];
  }
  return headers;
}

/** What a task or a delivery brings of its trace. */
export interface TraceCarrier {
  traceparent?: string | null | undefined;
  tracestate?: string | null | undefined;
}

/**
 * Runs `work` in the context `carrier` brings (its `traceparent`, perhaps `tracestate`); as it
 * is without OpenTelemetry or without a `traceparent`.
 */
export async function withTraceOf<T>(carrier: TraceCarrier, work: () => Promise<T>): Promise<T> {
  if (!carrier.traceparent) return work();
  const api = await openTelemetry();
  if (api === undefined) return work();
  const headers: Record<string, string> = { traceparent: carrier.traceparent };
  if (carrier.tracestate) headers.tracestate = carrier.tracestate;
  return api.context.with(api.propagation.extract(api.context.active(), headers), work);
}
