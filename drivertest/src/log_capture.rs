//! The suite's tracing subscriber: captures what happens inside the `pgmill.job` spans of queues
//! named by [`capture_queue`], so cases can check the fields on a worker's log lines; keeps the
//! engine's own spans (`pgmill.claim`, ...) with the fields of the service spans around them
//! ([`engine_spans`]), and the events logged in those ([`engine_events`]); and prints everything
//! else when `RUST_LOG` is set (e.g. `RUST_LOG=pgmill=debug`).
//!
//! A test binary has one global subscriber, shared by cases running in parallel: each case
//! captures only the spans of its own queue (named after its schema).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// Queues whose job spans are captured start with this.
const PREFIX: &str = "captured_";

/// A span's or event's fields, formatted (strings without quotes, others by `Debug`).
pub type Fields = BTreeMap<String, String>;

/// One event logged inside a captured job span.
#[derive(Debug, Clone)]
pub struct CapturedEvent {
    /// The level, e.g. `INFO`.
    pub level: tracing::Level,
    /// The target, e.g. `pgmill::middleware::job_tracing`.
    pub target: String,
    /// The event's own fields, `message` among them.
    pub fields: Fields,
    /// The fields of the enclosing `pgmill.job` span when the event was logged.
    pub span: Fields,
}

#[derive(Default)]
struct Store {
    events: Vec<CapturedEvent>,
    /// Job spans that closed, with every field they recorded.
    closed: Vec<Fields>,
    /// Engine spans that closed: the name, and every field they and their ancestors recorded.
    engine: Vec<(String, Fields)>,
    /// Events logged outside job spans, in engine or service spans: their own fields and their
    /// spans' (their own win).
    engine_events: Vec<Fields>,
}

static STORE: Mutex<Store> = Mutex::new(Store {
    events: Vec::new(),
    closed: Vec::new(),
    engine: Vec::new(),
    engine_events: Vec::new(),
});

/// The engine's spans of a step that costs time.
const ENGINE_SPANS: [&str; 4] = [
    "pgmill.claim",
    "pgmill.completer_flush",
    "pgmill.notifier_connect",
    "pgmill.leader_elect",
];

/// The spans of the services running those steps, whose fields (a queue, a client id, a schema)
/// tell one test's client from another's.
const SERVICE_SPANS: [&str; 4] = ["producer", "completer", "notifier", "elector"];

/// Field values whose engine spans are kept: a test's queue, schema or client id.
static WATCHED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Keeps from now on the engine spans with a field (of their own or an enclosing span's) equal
/// to `value`, for [`engine_spans`].
pub fn watch_engine_spans(value: &str) {
    WATCHED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(value.to_owned());
}

/// The closed engine spans named `name` whose own or enclosing spans' fields include
/// `key = value` (watched with [`watch_engine_spans`]): each with its own fields and its
/// ancestors' (its own win).
pub fn engine_spans(name: &str, key: &str, value: &str) -> Vec<Fields> {
    let store = STORE.lock().unwrap_or_else(|p| p.into_inner());
    store
        .engine
        .iter()
        .filter(|(n, f)| n == name && f.get(key).map(String::as_str) == Some(value))
        .map(|(_, f)| f.clone())
        .collect()
}

/// The events with the message `message` logged outside job spans, in engine or service spans
/// (a `notifier`'s, a `producer`'s, ...) whose fields include `key = value` (watched with
/// [`watch_engine_spans`]): each with its own fields and its spans'.
pub fn engine_events(message: &str, key: &str, value: &str) -> Vec<Fields> {
    let store = STORE.lock().unwrap_or_else(|p| p.into_inner());
    store
        .engine_events
        .iter()
        .filter(|f| {
            f.get("message").map(String::as_str) == Some(message)
                && f.get(key).map(String::as_str) == Some(value)
        })
        .cloned()
        .collect()
}

/// A queue name of the test's own whose job spans are captured.
pub fn capture_queue(schema: &pgmill::Schema) -> String {
    format!("{PREFIX}{}", schema.name())
}

/// The events logged inside the job spans of `queue` so far.
pub fn events(queue: &str) -> Vec<CapturedEvent> {
    let store = STORE.lock().unwrap_or_else(|p| p.into_inner());
    store
        .events
        .iter()
        .filter(|e| e.span.get("queue").map(String::as_str) == Some(queue))
        .cloned()
        .collect()
}

/// The closed job spans of `queue` so far, with every field they recorded.
pub fn closed_spans(queue: &str) -> Vec<Fields> {
    let store = STORE.lock().unwrap_or_else(|p| p.into_inner());
    store
        .closed
        .iter()
        .filter(|s| s.get("queue").map(String::as_str) == Some(queue))
        .cloned()
        .collect()
}

struct FieldVisitor<'a>(&'a mut Fields);

impl Visit for FieldVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// The fields of a captured job span, kept in its extensions.
struct JobSpanFields(Fields);

/// The fields of an engine or service span, kept in its extensions.
struct EngineSpanFields(Fields);

struct CaptureLayer;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for CaptureLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let name = attrs.metadata().name();
        if ENGINE_SPANS.contains(&name) || SERVICE_SPANS.contains(&name) {
            let mut fields = Fields::new();
            attrs.record(&mut FieldVisitor(&mut fields));
            if let Some(span) = ctx.span(id) {
                span.extensions_mut().insert(EngineSpanFields(fields));
            }
            return;
        }
        if name != "pgmill.job" {
            return;
        }
        let mut fields = Fields::new();
        attrs.record(&mut FieldVisitor(&mut fields));
        if fields.get("queue").is_some_and(|q| q.starts_with(PREFIX))
            && let Some(span) = ctx.span(id)
        {
            span.extensions_mut().insert(JobSpanFields(fields));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(fields) = extensions.get_mut::<JobSpanFields>() {
            values.record(&mut FieldVisitor(&mut fields.0));
        } else if let Some(fields) = extensions.get_mut::<EngineSpanFields>() {
            values.record(&mut FieldVisitor(&mut fields.0));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(scope) = ctx.event_scope(event) else {
            return;
        };
        let spans: Vec<_> = scope.from_root().collect();
        let Some(span) = spans
            .iter()
            .rev()
            .find_map(|s| s.extensions().get::<JobSpanFields>().map(|f| f.0.clone()))
        else {
            // Outside job spans: kept when its spans' fields include a watched value.
            let mut fields = Fields::new();
            for s in &spans {
                if let Some(f) = s.extensions().get::<EngineSpanFields>() {
                    fields.extend(f.0.clone());
                }
            }
            let watched = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
            if fields.values().any(|v| watched.contains(v)) {
                drop(watched);
                event.record(&mut FieldVisitor(&mut fields));
                STORE
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .engine_events
                    .push(fields);
            }
            return;
        };
        let mut fields = Fields::new();
        event.record(&mut FieldVisitor(&mut fields));
        let captured = CapturedEvent {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            fields,
            span,
        };
        STORE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .events
            .push(captured);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && ENGINE_SPANS.contains(&span.name())
        {
            let mut fields = Fields::new();
            // Outermost first, so the span's own fields win.
            for s in span.scope().from_root() {
                if let Some(f) = s.extensions().get::<EngineSpanFields>() {
                    fields.extend(f.0.clone());
                }
            }
            let watched = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
            if fields.values().any(|v| watched.contains(v)) {
                STORE
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .engine
                    .push((span.name().to_owned(), fields));
            }
            return;
        }
        if let Some(span) = ctx.span(&id)
            && let Some(fields) = span.extensions_mut().remove::<JobSpanFields>()
        {
            STORE
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .closed
                .push(fields.0);
        }
    }
}

/// Installs the suite's subscriber once per test binary.
pub(crate) fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let print = std::env::var_os("RUST_LOG").is_some().then(|| {
            tracing_subscriber::fmt::layer()
                .with_test_writer()
                .with_filter(tracing_subscriber::EnvFilter::from_default_env())
        });
        let capture =
            CaptureLayer.with_filter(filter_fn(|meta| meta.target().starts_with("pgmill")));
        let _ = tracing_subscriber::registry()
            .with(capture)
            .with(print)
            .try_init();
    });
}
