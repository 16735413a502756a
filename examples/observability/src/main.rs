//! Run with: cargo run -p example-observability
//!
//! With no `DATABASE_URL` it starts a throwaway PostgreSQL cluster from the installed binaries
//! (and removes it at the end); `PGMILL_SCHEMA` names the schema (default `public`). It installs
//!
//! - an OpenTelemetry tracer fed by `tracing-opentelemetry`, exporting to stdout (and over OTLP/HTTP
//!   when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, e.g. `http://localhost:4318`), with a W3C trace
//!   propagator that carries the trace from the inserting span to the job's attempts;
//! - a Prometheus recorder for pgmill's metrics, with its scrape endpoint on a free local port.
//!
//! Then a "web request" span enqueues a welcome e-mail whose first attempt fails, and a few jobs
//! that wait (scheduled, pending). Once the e-mail is sent on its retry, it prints the request's
//! trace (the request span and both attempts' `pgmill.job` spans share one trace id), scrapes its
//! own Prometheus endpoint once and prints pgmill's metrics, the queue-depth gauges among them.
//! Logs go to stderr (`RUST_LOG`, default `info`).

#![allow(clippy::print_stdout)] // An example reports what it did on stdout.

use std::collections::HashMap;
use std::error::Error;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use chrono::TimeDelta;
use metrics_exporter_prometheus::PrometheusBuilder;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use pgmill::middleware::{MetricsConfig, TRACE_METADATA_KEY, TraceHeaders, TracePropagator};
use pgmill::{Client, EventKind, InsertOpts, Job, JobArgs, JobError, Schema, Worker};
use pgmill_driver_sqlx::SqlxDriver;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::{Instrument, info, info_span};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Sends a welcome e-mail.
#[derive(Serialize, Deserialize)]
struct WelcomeEmail {
    to: String,
}

impl JobArgs for WelcomeEmail {
    const KIND: &'static str = "welcome_email";
}

/// Fails its first attempt (the mail server is "down"), then sends.
#[derive(Default)]
struct WelcomeEmailWorker {
    failed_once: AtomicBool,
}

impl Worker<WelcomeEmail> for WelcomeEmailWorker {
    async fn work(&self, job: &Job<WelcomeEmail>) -> Result<(), JobError> {
        // This line carries the job's span fields: job_id, kind, queue, attempt, ...
        info!(to = %job.args.to, "sending the welcome e-mail");
        if !self.failed_once.swap(true, Ordering::SeqCst) {
            return Err(JobError::retry("mail server answered 421"));
        }
        tokio::time::sleep(Duration::from_millis(15)).await;
        Ok(())
    }

    fn next_retry(&self, _job: &Job<WelcomeEmail>) -> Option<TimeDelta> {
        Some(TimeDelta::milliseconds(500))
    }
}

/// W3C Trace Context through the job's metadata: the inserting span's context is stored at
/// insert, and each attempt's span continues it.
#[derive(Debug)]
struct W3cTraceContext;

impl TracePropagator for W3cTraceContext {
    fn inject(&self, headers: &mut TraceHeaders) {
        let cx = tracing::Span::current().context();
        TraceContextPropagator::new().inject_context(&cx, headers);
    }

    fn extract(&self, headers: &TraceHeaders, span: &tracing::Span) {
        // Continue the inserting trace (`span.add_link(..)` would link to it instead).
        let _ = span.set_parent(TraceContextPropagator::new().extract(headers));
    }
}

/// Keeps every finished span, to print the traces at the end.
#[derive(Debug, Clone, Default)]
struct StdoutExporter {
    spans: Arc<Mutex<Vec<SpanData>>>,
}

impl SpanExporter for StdoutExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.spans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(batch);
        Ok(())
    }
}

impl StdoutExporter {
    /// Prints the spans of `trace` as a tree, children under their parent.
    fn print_trace(&self, trace: TraceId) {
        let spans = self.spans.lock().unwrap_or_else(|p| p.into_inner());
        let mut of_trace: Vec<&SpanData> = spans
            .iter()
            .filter(|s| s.span_context.trace_id() == trace)
            .collect();
        of_trace.sort_by_key(|s| s.start_time);
        println!("\nTrace {trace} ({} spans):", of_trace.len());
        let roots = of_trace.iter().filter(|s| {
            !of_trace
                .iter()
                .any(|p| p.span_context.span_id() == s.parent_span_id)
        });
        for root in roots {
            print_span(root, &of_trace, 1);
        }
    }

    /// The trace of the first span named `name`.
    fn trace_of(&self, name: &str) -> Option<TraceId> {
        let spans = self.spans.lock().unwrap_or_else(|p| p.into_inner());
        spans
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.span_context.trace_id())
    }

    /// The traces of every span named `name`.
    fn traces_of(&self, name: &str) -> Vec<TraceId> {
        let spans = self.spans.lock().unwrap_or_else(|p| p.into_inner());
        spans
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.span_context.trace_id())
            .collect()
    }
}

fn print_span(span: &SpanData, all: &[&SpanData], depth: usize) {
    let took = span
        .end_time
        .duration_since(span.start_time)
        .unwrap_or_default();
    let shown = ["job_id", "kind", "attempt", "outcome", "http.route"];
    let attributes: Vec<String> = span
        .attributes
        .iter()
        .filter(|kv| shown.contains(&kv.key.as_str()))
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    println!(
        "{:indent$}{} [{:.1} ms] {}",
        "",
        span.name,
        took.as_secs_f64() * 1e3,
        attributes.join(" "),
        indent = depth * 2
    );
    let id: SpanId = span.span_context.span_id();
    for child in all.iter().filter(|s| s.parent_span_id == id) {
        print_span(child, all, depth + 1);
    }
}

/// Scrapes `addr`'s `/metrics` once, with a plain HTTP/1.0 request.
async fn scrape(addr: std::net::SocketAddr) -> Result<String, Box<dyn Error>> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let body = response
        .split_once("\r\n\r\n")
        .map_or(response.as_str(), |(_, body)| body);
    Ok(body.to_owned())
}

/// A free port on the loopback interface.
fn free_local_addr() -> Result<std::net::SocketAddr, Box<dyn Error>> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Traces: tracing spans become OpenTelemetry spans, kept for stdout and sent over OTLP when
    // an endpoint is configured.
    let stdout = StdoutExporter::default();
    let mut provider = SdkTracerProvider::builder().with_simple_exporter(stdout.clone());
    let otlp = std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
    if otlp {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()?;
        provider = provider.with_batch_exporter(exporter);
    }
    let provider = provider.build();
    let tracer = provider.tracer("example-observability");
    // RUST_LOG filters the log lines only: the traces keep every INFO span (the request's and
    // pgmill's) whatever the log level, or a quieter RUST_LOG would lose the trace.
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| "info".into()),
                ),
        )
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(LevelFilter::INFO),
        )
        .init();

    // Metrics: a Prometheus recorder with its scrape endpoint, installed before the client.
    let metrics_addr = free_local_addr()?;
    PrometheusBuilder::new()
        .with_http_listener(metrics_addr)
        .install()?;

    // A database: DATABASE_URL, or a throwaway cluster that lives until the end of main.
    let (url, _cluster) = match std::env::var("DATABASE_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            println!("No DATABASE_URL: starting a throwaway PostgreSQL cluster...");
            let cluster = pgmill_testdb::Cluster::start()?;
            (cluster.url(), Some(cluster))
        }
    };
    let schema = match std::env::var("PGMILL_SCHEMA") {
        Ok(name) => Schema::new(&name)?,
        Err(_) => Schema::public(),
    };
    let pool = sqlx::PgPool::connect(&url).await?;
    let client = Client::builder(SqlxDriver::new(pool))
        .schema(schema)
        .queue("default", 10)
        .worker(WelcomeEmailWorker::default())
        .metrics(MetricsConfig::new().sample_interval(Duration::from_millis(250)))
        .trace_propagator(W3cTraceContext)
        .build()?;
    client.migrate().await?;
    let mut events = client.subscribe();
    client.start().await?;

    // The web request that enqueues: its span's trace context is stored with the job.
    let request = info_span!("POST /signup", otel.kind = "server", http.route = "/signup");
    let job = async {
        info!("creating the account");
        client
            .insert(WelcomeEmail {
                to: "ada@example.com".into(),
            })
            .await
    }
    .instrument(request)
    .await?;
    println!(
        "Inserted job {} ({}) from the request; its metadata carries {}",
        job.id, job.kind, job.metadata[TRACE_METADATA_KEY]
    );
    // Jobs that wait, for the queue-depth gauges to show.
    for n in 0..3 {
        client
            .insert_with(
                WelcomeEmail {
                    to: format!("later{n}@example.com"),
                },
                InsertOpts::new().schedule_in(TimeDelta::hours(1)),
            )
            .await?;
    }
    client
        .insert_with(
            WelcomeEmail {
                to: "held@example.com".into(),
            },
            InsertOpts::new().pending(),
        )
        .await?;

    loop {
        let event = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await?
            .ok_or("the client went away")?;
        if event.job.id != job.id {
            continue;
        }
        match event.kind {
            EventKind::JobFailed => println!(
                "  attempt {} failed: {}; retried",
                event.job.attempt,
                event.error.as_deref().unwrap_or("")
            ),
            EventKind::JobCompleted => {
                println!("  attempt {} completed", event.job.attempt);
                break;
            }
            other => println!("  {other:?}"),
        }
    }
    // The leader samples the queues every 250 ms (longer after a slow pass): scrape until a
    // sample taken after the e-mail went out shows the three scheduled jobs.
    let shows_depth = |body: &str| {
        body.lines().any(|l| {
            l.starts_with("pgmill_queue_jobs{")
                && l.contains("state=\"scheduled\"")
                && l.ends_with(" 3")
        })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let body = loop {
        let body = scrape(metrics_addr).await?;
        if shows_depth(&body) || tokio::time::Instant::now() > deadline {
            break body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    client.stop().await;
    let flushed = SystemTime::now();
    provider.force_flush()?;

    let trace = stdout
        .trace_of("POST /signup")
        .ok_or("the request span was exported")?;
    stdout.print_trace(trace);
    let job_traces = stdout.traces_of("pgmill.job");
    let joined = job_traces.iter().filter(|t| **t == trace).count();
    println!(
        "{joined} of {} pgmill.job spans continue the request's trace.",
        job_traces.len()
    );
    if joined < 2 {
        return Err("both attempts of the e-mail should continue the request's trace".into());
    }

    println!("\nScraped http://{metrics_addr}/metrics (pgmill's series):");
    let wanted = [
        "pgmill_queue_jobs",
        "pgmill_queue_oldest_available_seconds",
        "pgmill_job_attempts_total",
        "pgmill_jobs_inserted_total",
        "pgmill_job_run_seconds_count",
        "pgmill_claim_jobs_count",
        "pgmill_is_leader",
        "pgmill_leader_elections_total",
    ];
    let mut by_name: HashMap<&str, Vec<&str>> = HashMap::new();
    for line in body.lines().filter(|l| l.starts_with("pgmill_")) {
        let name = line.split(['{', ' ']).next().unwrap_or(line);
        by_name.entry(name).or_default().push(line);
    }
    for name in wanted {
        for line in by_name.get(name).into_iter().flatten() {
            println!("  {line}");
        }
    }
    if !shows_depth(&body) {
        return Err("the queue-depth gauge should show the 3 scheduled jobs".into());
    }
    println!(
        "\n{} pgmill series in all; every name and label is listed in docs/observability.md.",
        body.lines().filter(|l| l.starts_with("pgmill_")).count()
    );
    if otlp {
        println!("Spans were also sent over OTLP (flushed at {flushed:?}).");
    }
    provider.shutdown()?;
    Ok(())
}
