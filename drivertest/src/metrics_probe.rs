//! A metrics recorder of the test's own (given to the client through
//! `MetricsConfig::recorder`), read without resetting anything: what an exporter would show.

use std::sync::Arc;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use metrics_util::registry::{AtomicStorage, Registry};
use pgmill::middleware::MetricKind;

/// Records every metric it is given, for a test to read.
#[derive(Clone)]
pub struct MetricsProbe {
    registry: Arc<Registry<Key, AtomicStorage>>,
}

impl std::fmt::Debug for MetricsProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsProbe").finish_non_exhaustive()
    }
}

impl Default for MetricsProbe {
    fn default() -> Self {
        MetricsProbe {
            registry: Arc::new(Registry::atomic()),
        }
    }
}

fn matches(key: &Key, name: &str, labels: &[(&str, &str)]) -> bool {
    key.name() == name
        && labels
            .iter()
            .all(|(k, v)| key.labels().any(|l| l.key() == *k && l.value() == *v))
}

impl MetricsProbe {
    /// An empty probe.
    pub fn new() -> Self {
        Self::default()
    }

    /// The probe as the recorder a client records into.
    pub fn recorder(&self) -> Arc<dyn Recorder + Send + Sync> {
        Arc::new(self.clone())
    }

    /// The sum of the counters named `name` whose labels include `labels`; `None` when none was
    /// registered.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> Option<u64> {
        let handles = self.registry.get_counter_handles();
        let values: Vec<u64> = handles
            .iter()
            .filter(|(k, _)| matches(k, name, labels))
            .map(|(_, c)| c.load(std::sync::atomic::Ordering::SeqCst))
            .collect();
        (!values.is_empty()).then(|| values.iter().sum())
    }

    /// The value of the gauge named `name` with exactly the given labels.
    pub fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.registry
            .get_gauge_handles()
            .iter()
            .find(|(k, _)| matches(k, name, labels) && k.labels().count() == labels.len())
            .map(|(_, g)| f64::from_bits(g.load(std::sync::atomic::Ordering::SeqCst)))
    }

    /// How many observations the histograms named `name` whose labels include `labels` hold.
    pub fn observations(&self, name: &str, labels: &[(&str, &str)]) -> Option<usize> {
        let handles = self.registry.get_histogram_handles();
        let counts: Vec<usize> = handles
            .iter()
            .filter(|(k, _)| matches(k, name, labels))
            .map(|(_, h)| h.data().len())
            .collect();
        (!counts.is_empty()).then(|| counts.iter().sum())
    }

    /// The label names of every series of `name` registered as `kind`.
    pub fn label_sets(&self, kind: MetricKind, name: &str) -> Vec<Vec<String>> {
        let keys: Vec<Key> = match kind {
            MetricKind::Counter => self.registry.get_counter_handles().into_keys().collect(),
            MetricKind::Gauge => self.registry.get_gauge_handles().into_keys().collect(),
            MetricKind::Histogram => self.registry.get_histogram_handles().into_keys().collect(),
            _ => Vec::new(),
        };
        keys.iter()
            .filter(|k| k.name() == name)
            .map(|k| k.labels().map(|l| l.key().to_owned()).collect())
            .collect()
    }
}

impl Recorder for MetricsProbe {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.registry.get_or_create_counter(key, Arc::clone))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.registry.get_or_create_gauge(key, Arc::clone))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.registry.get_or_create_histogram(key, Arc::clone))
    }
}
