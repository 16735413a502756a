//! The `pgmill.job` span: its fields on a worker's own lines, the start, finish and failure
//! lines, and the trace context carried from the inserting span to every attempt.

use std::sync::{Arc, Mutex};

use pgmill::middleware::{TRACE_METADATA_KEY, TraceHeaders, TracePropagator};
use pgmill::{InsertOpts, JobError, JobState};
use tracing::{Instrument, Level, info_span};

use crate::log_capture::{
    CapturedEvent, capture_queue, closed_spans, engine_spans, events, watch_engine_spans,
};
use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, migrated as ctx};

/// How long the worker of [`worker_lines_carry_the_job_span_fields`] works.
const WORK: std::time::Duration = std::time::Duration::from_millis(80);

fn message(e: &CapturedEvent) -> &str {
    e.fields.get("message").map_or("", String::as_str)
}

/// What a worker logs carries the job's id, kind, queue, attempt, max attempts and priority; the
/// span logs its start and finish at DEBUG and records the outcome and duration: the work's own,
/// at least the time the worker takes and at most the time from the insert to the end.
pub async fn worker_lines_carry_the_job_span_fields<H: Harness>() {
    let ctx = ctx::<H>().await;
    let queue = capture_queue(&ctx.schema);
    let worker = ScriptedWorker::new(|run| async move {
        tracing::info!(n = run.n, "worker says hello");
        // The work takes this long: its recorded duration can be checked against it.
        tokio::time::sleep(WORK).await;
        Ok(())
    });
    let client = test_client(&ctx)
        .queue(&queue, 2)
        .worker(worker)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let opts = InsertOpts::new().queue(&queue).priority(2).max_attempts(5);
    let inserted_at = std::time::Instant::now();
    let job = client.insert_with(Task { n: 7 }, opts).await.unwrap();
    wait_for("completion and the span closed", async || {
        count_in(&ctx, JobState::Completed).await == 1 && closed_spans(&queue).len() == 1
    })
    .await;
    let wall_ms = inserted_at.elapsed().as_secs_f64() * 1e3;
    client.stop().await;
    let work_ms = WORK.as_secs_f64() * 1e3;
    let in_bounds = |ms: f64| ms >= work_ms && ms <= wall_ms;

    let events = events(&queue);
    let hello = events
        .iter()
        .find(|e| message(e) == "worker says hello")
        .expect("the worker's line is captured inside the job span");
    assert_eq!(hello.level, Level::INFO);
    assert_eq!(hello.fields["n"], "7");
    let expected = [
        ("job_id", job.id.0.to_string()),
        ("kind", "task".to_owned()),
        ("queue", queue.clone()),
        ("attempt", "1".to_owned()),
        ("max_attempts", "5".to_owned()),
        ("priority", "2".to_owned()),
    ];
    for (field, value) in &expected {
        assert_eq!(
            hello.span.get(*field),
            Some(value),
            "{field} on the worker's line"
        );
    }

    let started = events
        .iter()
        .find(|e| message(e) == "job started")
        .expect("a start line");
    assert_eq!(started.level, Level::DEBUG);
    assert!(started.fields.contains_key("queue_wait_ms"));
    let finished = events
        .iter()
        .find(|e| message(e) == "job finished")
        .expect("a finish line");
    assert_eq!(finished.level, Level::DEBUG);
    assert_eq!(finished.fields["outcome"], "completed");
    let ms: f64 = finished.fields["duration_ms"].parse().unwrap();
    assert!(
        in_bounds(ms),
        "the finish line's duration {ms} ms is not within the work's {work_ms} ms and the \
         {wall_ms} ms from insert to completion"
    );

    let span = &closed_spans(&queue)[0];
    assert_eq!(span["outcome"], "completed");
    let ms: f64 = span["duration_ms"].parse().unwrap();
    assert!(
        in_bounds(ms),
        "the span's duration {ms} ms is not within the work's {work_ms} ms and the {wall_ms} ms \
         from insert to completion"
    );
    assert!(
        !span.contains_key("otel.status_code"),
        "success is no error"
    );
}

/// A failed attempt logs at WARN with the error and what happens next: retried, discarded (no
/// attempts left) or cancelled; each attempt's span records its outcome.
pub async fn failed_attempts_warn_with_the_error_and_what_happens_next<H: Harness>() {
    let ctx = ctx::<H>().await;
    let queue = capture_queue(&ctx.schema);
    let worker = ScriptedWorker::new(|run| async move {
        match (run.n, run.attempt) {
            (1, 1) => Err(JobError::retry("first attempt fails")),
            (2, _) => Err(JobError::retry("always fails")),
            (3, _) => Err(JobError::cancel("not wanted any more")),
            _ => Ok(()),
        }
    });
    let client = test_client(&ctx)
        .queue(&queue, 3)
        .worker(worker)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let on = |max| InsertOpts::new().queue(&queue).max_attempts(max);
    let retried = client.insert_with(Task { n: 1 }, on(3)).await.unwrap();
    let exhausted = client.insert_with(Task { n: 2 }, on(1)).await.unwrap();
    let cancelled = client.insert_with(Task { n: 3 }, on(3)).await.unwrap();
    wait_for("every job finished and its spans closed", async || {
        count_in(&ctx, JobState::Completed).await == 1
            && count_in(&ctx, JobState::Discarded).await == 1
            && count_in(&ctx, JobState::Cancelled).await == 1
            && closed_spans(&queue).len() == 4
    })
    .await;
    client.stop().await;

    let events = events(&queue);
    let warning = |id: pgmill::JobId| -> CapturedEvent {
        let mut warnings: Vec<&CapturedEvent> = events
            .iter()
            .filter(|e| e.level == Level::WARN && e.span["job_id"] == id.0.to_string())
            .collect();
        assert_eq!(warnings.len(), 1, "one warning for job {id}");
        warnings.remove(0).clone()
    };
    let w = warning(retried.id);
    assert_eq!(w.fields["error"], "first attempt fails");
    assert_eq!(w.fields["next"], "retry");
    assert_eq!(w.fields["retry_in_ms"], "0");
    assert!(w.fields.contains_key("retry_at"));
    assert!(message(&w).contains("retried"), "{}", message(&w));
    let w = warning(exhausted.id);
    assert_eq!(w.fields["error"], "always fails");
    assert_eq!(w.fields["next"], "discard");
    assert!(message(&w).contains("no attempts left"), "{}", message(&w));
    let w = warning(cancelled.id);
    assert_eq!(w.fields["error"], "not wanted any more");
    assert_eq!(w.fields["next"], "cancel");

    let mut outcomes: Vec<(String, String, String)> = closed_spans(&queue)
        .into_iter()
        .map(|s| {
            (
                s["job_id"].clone(),
                s["attempt"].clone(),
                s["outcome"].clone(),
            )
        })
        .collect();
    outcomes.sort();
    let mut expected = vec![
        (retried.id.0.to_string(), "1".into(), "retryable".into()),
        (retried.id.0.to_string(), "2".into(), "completed".into()),
        (exhausted.id.0.to_string(), "1".into(), "discarded".into()),
        (cancelled.id.0.to_string(), "1".into(), "cancelled".into()),
    ];
    expected.sort();
    assert_eq!(outcomes, expected);
    let errors = closed_spans(&queue)
        .into_iter()
        .filter(|s| s.get("otel.status_code").map(String::as_str) == Some("error"))
        .count();
    assert_eq!(errors, 3, "failed attempts mark their span as an error");
}

/// One `extract` call: the headers, and the id of the span they were given with.
type Extracted = (TraceHeaders, Option<u64>);

/// Records what pgmill asks of a propagator: a `traceparent` naming the inserting span, and the
/// spans it is asked to continue that trace in.
#[derive(Debug, Default, Clone)]
pub struct RecordingPropagator {
    extracted: Arc<Mutex<Vec<Extracted>>>,
}

impl RecordingPropagator {
    /// The `traceparent` injected for a span of id `span_id`.
    pub fn traceparent(span_id: u64) -> String {
        format!("00-0af7651916cd43dd8448eb211c80319c-{span_id:016x}-01")
    }

    /// The headers and the span of every `extract` call so far.
    pub fn extracted(&self) -> Vec<Extracted> {
        self.extracted.lock().unwrap().clone()
    }
}

impl TracePropagator for RecordingPropagator {
    fn inject(&self, headers: &mut TraceHeaders) {
        if let Some(id) = tracing::Span::current().id() {
            headers.insert("traceparent".into(), Self::traceparent(id.into_u64()));
        }
    }

    fn extract(&self, headers: &TraceHeaders, span: &tracing::Span) {
        self.extracted
            .lock()
            .unwrap()
            .push((headers.clone(), span.id().map(|id| id.into_u64())));
    }
}

/// The inserting span's trace context is stored with the job, and every attempt's span, the
/// retry's too, is handed to the propagator with it before the worker runs in that span.
pub async fn trace_context_survives_a_retry<H: Harness>() {
    let ctx = ctx::<H>().await;
    let queue = capture_queue(&ctx.schema);
    let spans_seen = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&spans_seen);
    let worker = ScriptedWorker::new(move |run| {
        let current = tracing::Span::current().id().map(|id| id.into_u64());
        seen.lock().unwrap().push(current);
        async move {
            if run.attempt == 1 {
                Err(JobError::retry("first attempt fails"))
            } else {
                Ok(())
            }
        }
    });
    let propagator = RecordingPropagator::default();
    let client = test_client(&ctx)
        .queue(&queue, 2)
        .worker(worker)
        .trace_propagator(propagator.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let request = info_span!("request");
    let request_id = request
        .id()
        .expect("the request span is recorded")
        .into_u64();
    let job = client
        .insert_with(Task { n: 1 }, InsertOpts::new().queue(&queue))
        .instrument(request)
        .await
        .unwrap();
    wait_for("completion", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;

    let traceparent = RecordingPropagator::traceparent(request_id);
    assert_eq!(
        job.metadata[TRACE_METADATA_KEY]["traceparent"], traceparent,
        "the inserting span's context is stored with the job"
    );
    let extracted = propagator.extracted();
    assert_eq!(extracted.len(), 2, "one extract per attempt");
    for (headers, _) in &extracted {
        assert_eq!(headers.get("traceparent"), Some(&traceparent));
    }
    let extracted_spans: Vec<Option<u64>> = extracted.iter().map(|(_, s)| *s).collect();
    let worker_spans = spans_seen.lock().unwrap().clone();
    assert_eq!(
        extracted_spans, worker_spans,
        "each attempt's worker runs in the span that continued the trace"
    );
    assert!(worker_spans.iter().all(Option::is_some));
    let mut attempts: Vec<String> = closed_spans(&queue)
        .into_iter()
        .map(|s| s["attempt"].clone())
        .collect();
    attempts.sort();
    assert_eq!(attempts, ["1", "2"], "each attempt has a span of its own");
}

/// The engine's steps that cost time run in DEBUG spans with their batch sizes, inside the span
/// of the service running them: a claim (`queue`, `limit`, `num_jobs`), a completer flush
/// (`num_outcomes`, `num_recorded`, `num_superseded`), a leader election (`elected`) and the
/// notifier's listener opening (`reconnect`).
pub async fn engine_steps_run_in_debug_spans_with_batch_sizes<H: Harness>() {
    let ctx = ctx::<H>().await;
    let queue = capture_queue(&ctx.schema);
    let schema = ctx.schema.name().to_owned();
    let client = pgmill::Client::builder(ctx.driver.clone())
        .schema(ctx.schema.clone())
        .poll_interval(std::time::Duration::from_millis(50))
        .queue(&queue, 4)
        .worker(ScriptedWorker::new(|_| async { Ok(()) }))
        .build()
        .unwrap();
    for value in [queue.as_str(), schema.as_str(), client.id()] {
        watch_engine_spans(value);
    }
    client.start().await.unwrap();
    for n in 0..3 {
        client
            .insert_with(Task { n }, InsertOpts::new().queue(&queue))
            .await
            .unwrap();
    }
    let num = |f: &crate::log_capture::Fields, k: &str| -> u64 {
        f.get(k)
            .unwrap_or_else(|| panic!("{k} in {f:?}"))
            .parse()
            .unwrap_or_else(|_| panic!("{k} is a number in {f:?}"))
    };
    let recorded = |spans: Vec<crate::log_capture::Fields>| -> u64 {
        spans.iter().map(|f| num(f, "num_recorded")).sum()
    };
    wait_for("the jobs completed", async || {
        count_in(&ctx, JobState::Completed).await == 3
    })
    .await;
    wait_for("their outcomes flushed", async || {
        recorded(engine_spans("pgmill.completer_flush", "schema", &schema)) == 3
    })
    .await;
    wait_for("the client elected", async || {
        engine_spans("pgmill.leader_elect", "client_id", client.id())
            .iter()
            .any(|f| f.get("elected").map(String::as_str) == Some("true"))
    })
    .await;
    wait_for("the listener opened", async || {
        !engine_spans("pgmill.notifier_connect", "schema", &schema).is_empty()
    })
    .await;
    client.stop().await;

    let claims = engine_spans("pgmill.claim", "queue", &queue);
    assert!(!claims.is_empty(), "claims run in spans");
    for c in &claims {
        assert!(num(c, "limit") >= 1, "{c:?}");
        assert!(num(c, "num_jobs") <= num(c, "limit"), "{c:?}");
    }
    assert_eq!(
        claims.iter().map(|c| num(c, "num_jobs")).sum::<u64>(),
        3,
        "the claims' batch sizes add up to the jobs"
    );
    let flushes = engine_spans("pgmill.completer_flush", "schema", &schema);
    for f in &flushes {
        assert_eq!(
            num(f, "num_outcomes"),
            num(f, "num_recorded") + num(f, "num_superseded"),
            "{f:?}"
        );
    }
    assert_eq!(
        flushes.iter().map(|f| num(f, "num_outcomes")).sum::<u64>(),
        3
    );
    let connects = engine_spans("pgmill.notifier_connect", "schema", &schema);
    assert_eq!(
        connects
            .first()
            .and_then(|f| f.get("reconnect"))
            .map(String::as_str),
        Some("false"),
        "the first open is no reconnect: {connects:?}"
    );
}
