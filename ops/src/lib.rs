//! pgmill's operations files, shipped in the repository for users to import: a Grafana dashboard
//! (`grafana/pgmill.json`) over the metrics pgmill's clients emit, and Prometheus alerting rules
//! (`prometheus/pgmill-alerts.yml`) with their unit tests (`prometheus/pgmill-alerts.test.yml`).
//!
//! The files are the product; this crate holds their tests (every metric name they use is one
//! pgmill emits; `promtool` checks the rules and runs their tests) and gives their text to
//! programs that provision them.

/// The Grafana dashboard, as JSON (import it in Grafana, or provision it from a file).
pub const GRAFANA_DASHBOARD: &str = include_str!("../grafana/pgmill.json");

/// The Prometheus alerting rules, as a rule file (YAML).
pub const PROMETHEUS_ALERTS: &str = include_str!("../prometheus/pgmill-alerts.yml");

/// The unit tests of [`PROMETHEUS_ALERTS`], for `promtool test rules`.
pub const PROMETHEUS_ALERTS_TESTS: &str = include_str!("../prometheus/pgmill-alerts.test.yml");
