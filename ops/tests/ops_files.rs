//! The shipped dashboard and alerting rules use only metric names pgmill emits, the dashboard
//! shows every one of them and its queries are valid PromQL, and `promtool` accepts the rules and
//! passes their unit tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use pgmill::middleware::{METRICS, MetricKind};
use pgmill_ops::{GRAFANA_DASHBOARD, PROMETHEUS_ALERTS, PROMETHEUS_ALERTS_TESTS};

/// Suffixes Prometheus exporters give a histogram's series.
const HISTOGRAM_SUFFIXES: [&str; 3] = ["_bucket", "_sum", "_count"];

/// The metric a series name belongs to, if pgmill emits it.
fn metric_of(series: &str) -> Option<&'static str> {
    METRICS.iter().find_map(|m| {
        let own = series == m.name;
        let histogram = m.kind == MetricKind::Histogram
            && HISTOGRAM_SUFFIXES
                .iter()
                .any(|s| series.strip_suffix(s) == Some(m.name));
        (own || histogram).then_some(m.name)
    })
}

/// Every `pgmill_...` name in a PromQL expression (pgmill's metrics all start so; recording rules
/// would use colons, which end a name here).
fn pgmill_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("pgmill_") {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            names.push(tail[..len].to_owned());
        }
        rest = &tail[len..];
    }
    names
}

/// The PromQL of a dashboard: every panel target's `expr` and every template variable's query.
fn dashboard_queries(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("expr" | "definition", serde_json::Value::String(q)) => into.push(q.clone()),
                    ("query", serde_json::Value::String(q)) if q.contains('(') => {
                        into.push(q.clone())
                    }
                    _ => dashboard_queries(v, into),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| dashboard_queries(v, into)),
        _ => {}
    }
}

/// The value of every `key:` of a YAML file, a block scalar (`key: |`) included: enough for the
/// rule and rule-test files, whose expressions and series are plain strings.
fn yaml_values(yaml: &str, key: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut values = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start().trim_start_matches("- ");
        // The key's column: a block scalar's lines are indented further.
        let indent = line.len() - trimmed.len();
        i += 1;
        let Some(value) = trimmed.strip_prefix(&format!("{key}:")) else {
            continue;
        };
        let value = value.trim();
        if value == "|" || value == ">" {
            let mut block = Vec::new();
            while i < lines.len()
                && (lines[i].trim().is_empty()
                    || lines[i].len() - lines[i].trim_start().len() > indent)
            {
                block.push(lines[i].trim());
                i += 1;
            }
            values.push(block.join("\n"));
        } else {
            values.push(value.trim_matches(['\'', '"']).to_owned());
        }
    }
    values
}

/// The names in `queries` that are no metric pgmill emits.
fn unknown_names(queries: &[String]) -> BTreeSet<String> {
    queries
        .iter()
        .flat_map(|q| pgmill_names(q))
        .filter(|n| metric_of(n).is_none())
        .collect()
}

fn dashboard() -> serde_json::Value {
    serde_json::from_str(GRAFANA_DASHBOARD).expect("the dashboard is JSON")
}

#[test]
fn the_name_scanner_finds_names_and_their_suffixes() {
    assert_eq!(
        pgmill_names(
            "sum(rate(pgmill_job_run_seconds_sum{q=\"a\"}[5m])) / x_pgmill_not + pgmill_is_leader"
        ),
        ["pgmill_job_run_seconds_sum", "pgmill_is_leader"]
    );
    assert_eq!(
        metric_of("pgmill_job_run_seconds_bucket"),
        Some("pgmill_job_run_seconds")
    );
    assert_eq!(
        metric_of("pgmill_is_leader_count"),
        None,
        "a gauge has no _count"
    );
    assert_eq!(metric_of("pgmill_job_attempt_total"), None);
    let yaml =
        "a:\n  - expr: up > 0\n    for: 5m\n  - expr: |\n      x\n        + y\n    labels: {}\n";
    assert_eq!(yaml_values(yaml, "expr"), ["up > 0", "x\n+ y"]);
}

#[test]
fn the_dashboard_queries_only_metrics_pgmill_emits() {
    let mut queries = Vec::new();
    dashboard_queries(&dashboard(), &mut queries);
    assert!(
        queries.len() >= 20,
        "the dashboard's queries were found: {queries:?}"
    );
    let unknown = unknown_names(&queries);
    assert!(
        unknown.is_empty(),
        "grafana/pgmill.json queries metrics pgmill does not emit: {unknown:?}"
    );
}

#[test]
fn the_dashboard_shows_every_metric() {
    let mut queries = Vec::new();
    dashboard_queries(&dashboard(), &mut queries);
    let used: BTreeSet<&str> = queries
        .iter()
        .flat_map(|q| pgmill_names(q))
        .filter_map(|n| metric_of(&n))
        .collect();
    let missing: Vec<&str> = METRICS
        .iter()
        .map(|m| m.name)
        .filter(|n| !used.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "grafana/pgmill.json has no panel for {missing:?}"
    );
}

#[test]
fn the_dashboard_is_importable() {
    let d = dashboard();
    assert_eq!(d["uid"], "pgmill");
    let panels = d["panels"].as_array().expect("panels");
    let mut ids = BTreeSet::new();
    for p in panels {
        assert!(
            ids.insert(p["id"].as_i64().expect("an id")),
            "ids are unique"
        );
        let grid = &p["gridPos"];
        let (x, w) = (grid["x"].as_i64().unwrap(), grid["w"].as_i64().unwrap());
        assert!(
            x >= 0 && w > 0 && x + w <= 24,
            "{}: within the grid",
            p["title"]
        );
        if p["type"] != "row" {
            // Every query goes to the data source chosen in the dashboard's variable.
            assert_eq!(p["datasource"]["uid"], "${datasource}", "{}", p["title"]);
            for t in p["targets"].as_array().expect("targets") {
                assert_eq!(t["datasource"]["uid"], "${datasource}", "{}", p["title"]);
                assert!(t["expr"].as_str().is_some_and(|e| !e.is_empty()));
            }
        }
    }
}

#[test]
fn the_alert_rules_query_only_metrics_pgmill_emits() {
    let exprs = yaml_values(PROMETHEUS_ALERTS, "expr");
    let alerts = yaml_values(PROMETHEUS_ALERTS, "alert");
    assert_eq!(exprs.len(), alerts.len(), "one expression per alert");
    assert!(alerts.len() >= 6, "{alerts:?}");
    let unknown = unknown_names(&exprs);
    assert!(
        unknown.is_empty(),
        "prometheus/pgmill-alerts.yml queries metrics pgmill does not emit: {unknown:?}"
    );
    // The tests' synthetic series are named as pgmill names them, too.
    let series = yaml_values(PROMETHEUS_ALERTS_TESTS, "series");
    assert!(!series.is_empty());
    let unknown = unknown_names(&series);
    assert!(
        unknown.is_empty(),
        "prometheus/pgmill-alerts.test.yml feeds series pgmill does not emit: {unknown:?}"
    );
    // Every alert is tested.
    let tested: BTreeSet<String> = yaml_values(PROMETHEUS_ALERTS_TESTS, "alertname")
        .into_iter()
        .collect();
    for alert in &alerts {
        assert!(tested.contains(alert), "{alert} has no promtool test");
    }
}

fn ops_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Runs `promtool` with `args` in `dir`, panicking with its output unless it succeeds.
fn promtool_in(dir: &Path, args: &[&str]) {
    let output = match Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "promtool is not installed: the alert rules' tests need it (Debian: apt-get install prometheus)"
        ),
        Err(e) => panic!("cannot run promtool: {e}"),
    };
    assert!(
        output.status.success(),
        "promtool {}: {}\n{}\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn promtool_accepts_the_alert_rules() {
    promtool_in(
        &ops_dir().join("prometheus"),
        &["check", "rules", "pgmill-alerts.yml"],
    );
}

#[test]
fn promtool_passes_the_alert_rules_tests() {
    promtool_in(
        &ops_dir().join("prometheus"),
        &["test", "rules", "pgmill-alerts.test.yml"],
    );
}

/// Every dashboard query is valid PromQL once Grafana's variables are given values: promtool
/// checks them as the expressions of recording rules.
#[test]
fn promtool_parses_the_dashboard_queries() {
    let mut queries = Vec::new();
    dashboard_queries(&dashboard(), &mut queries);
    let mut rules = String::from("groups:\n  - name: pgmill_dashboard\n    rules:\n");
    for (i, q) in queries.iter().enumerate() {
        if q.starts_with("label_values(") {
            continue; // Grafana's own function, for the queue variable.
        }
        let promql = q
            .replace("$__rate_interval", "1m")
            .replace("$__range", "6h")
            .replace("$queue", ".*");
        assert!(!promql.contains('$'), "an unknown variable in {q}");
        // A JSON string is a YAML double-quoted scalar.
        let expr = serde_json::to_string(&promql).unwrap();
        rules.push_str(&format!(
            "      - record: pgmill_dashboard:query_{i}\n        expr: {expr}\n"
        ));
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pgmill-ops-dashboard");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dashboard-queries.yml"), rules).unwrap();
    promtool_in(&dir, &["check", "rules", "dashboard-queries.yml"]);
}
