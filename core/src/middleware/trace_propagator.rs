//! Distributed tracing across the queue: the inserting span's trace context travels in the job's
//! metadata to every attempt's span.

use std::collections::HashMap;
use std::fmt;

use crate::job::JobRow;
use crate::job_args::InsertParams;

/// The metadata key holding a job's trace context: an object of W3C Trace Context headers
/// (`{"traceparent": "00-…-…-01", "tracestate": "…"}`).
pub const TRACE_METADATA_KEY: &str = "trace_context";

/// Trace context headers, by name (W3C `traceparent`, `tracestate`, or whatever the propagator
/// uses). The same type OpenTelemetry's propagators inject into and extract from.
pub type TraceHeaders = HashMap<String, String>;

/// Carries a distributed trace from the span that inserts a job to the spans that run it.
///
/// pgmill does not depend on OpenTelemetry: the application provides the propagator (a few lines
/// over its own OpenTelemetry version, below) and registers it with
/// [`ClientBuilder::trace_propagator`](crate::ClientBuilder::trace_propagator) (or
/// [`Inserter::with_trace_propagator`](crate::Inserter::with_trace_propagator) in a process that
/// only inserts). At insert, pgmill asks it for the current span's headers once per insert call
/// and stores them in each job's metadata under [`TRACE_METADATA_KEY`] (a job that already has
/// that key keeps its own). On every attempt, pgmill hands the stored headers and the new
/// `pgmill.job` span to [`TracePropagator::extract`] before the span is entered, so the span can
/// continue the inserting trace (or link to it). Retries carry the same context, since it lives in
/// the job's row.
///
/// # Examples
///
/// With `opentelemetry` and `tracing-opentelemetry` (the application's dependencies, not
/// pgmill's):
///
/// ```text
/// use opentelemetry::propagation::TextMapPropagator;
/// use opentelemetry_sdk::propagation::TraceContextPropagator;
/// use tracing_opentelemetry::OpenTelemetrySpanExt;
///
/// #[derive(Debug)]
/// struct W3c;
///
/// impl pgmill::middleware::TracePropagator for W3c {
///     fn inject(&self, headers: &mut pgmill::middleware::TraceHeaders) {
///         let cx = tracing::Span::current().context();
///         TraceContextPropagator::new().inject_context(&cx, headers);
///     }
///
///     fn extract(&self, headers: &pgmill::middleware::TraceHeaders, span: &tracing::Span) {
///         let _ = span.set_parent(TraceContextPropagator::new().extract(headers));
///     }
/// }
/// ```
///
/// (The `example-observability` crate runs exactly this.) A propagator of its own, without
/// OpenTelemetry:
///
/// ```
/// use pgmill::middleware::{TraceHeaders, TracePropagator};
///
/// /// Passes a request id along: the inserting code sets it, the worker's span logs it.
/// #[derive(Debug)]
/// struct RequestId;
///
/// impl TracePropagator for RequestId {
///     fn inject(&self, headers: &mut TraceHeaders) {
///         headers.insert("traceparent".into(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into());
///     }
///
///     fn extract(&self, headers: &TraceHeaders, span: &tracing::Span) {
///         span.in_scope(|| tracing::debug!(traceparent = ?headers.get("traceparent"), "continuing"));
///     }
/// }
/// ```
pub trait TracePropagator: Send + Sync + fmt::Debug + 'static {
    /// Writes the current span's trace context into `headers`; writing nothing stores nothing.
    /// Called in the inserting code's span, once per insert call.
    fn inject(&self, headers: &mut TraceHeaders);

    /// Makes `span` (a job's `pgmill.job` span, not entered yet) continue or link to the trace in
    /// `headers`. Called on every attempt of a job that has a stored trace context.
    fn extract(&self, headers: &TraceHeaders, span: &tracing::Span);
}

/// The headers `propagator` injects for the current span (empty values left out), or `None` when
/// it writes none.
pub(crate) fn current_headers(propagator: &dyn TracePropagator) -> Option<serde_json::Value> {
    let mut headers = TraceHeaders::new();
    propagator.inject(&mut headers);
    let object: serde_json::Map<String, serde_json::Value> = headers
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k, serde_json::Value::String(v)))
        .collect();
    (!object.is_empty()).then_some(serde_json::Value::Object(object))
}

/// Stores `headers` in `job`'s metadata unless it carries a trace context already.
pub(crate) fn store(job: &mut InsertParams, headers: &serde_json::Value) {
    job.metadata_mut()
        .entry(TRACE_METADATA_KEY)
        .or_insert_with(|| headers.clone());
}

/// The trace context stored with `job`, if any (string values only).
pub(crate) fn stored(job: &JobRow) -> Option<TraceHeaders> {
    let object = job.metadata.get(TRACE_METADATA_KEY)?.as_object()?;
    let headers: TraceHeaders = object
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect();
    (!headers.is_empty()).then_some(headers)
}
