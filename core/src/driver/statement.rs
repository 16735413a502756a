//! Statements (SQL plus bound parameters) and COPY payloads, built by core without any I/O.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;

use super::value::{IntoValue, Value};

/// SQL text and its bound parameters, ready for a driver to run.
///
/// Core renders the SQL once per schema, so cloning a statement's text is cheap.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    sql: Arc<str>,
    params: Vec<Value>,
}

impl Statement {
    /// A statement with no parameters yet.
    pub fn new(sql: impl Into<Arc<str>>) -> Self {
        Statement {
            sql: sql.into(),
            params: Vec::new(),
        }
    }

    /// A statement with no parameters yet and room for `params` of them, so binding them
    /// allocates once.
    pub(crate) fn with_capacity(sql: impl Into<Arc<str>>, params: usize) -> Self {
        Statement {
            sql: sql.into(),
            params: Vec::with_capacity(params),
        }
    }

    /// Binds the next parameter (`$1`, then `$2`, ...).
    pub fn bind(mut self, value: impl IntoValue) -> Self {
        self.params.push(value.into_value());
        self
    }

    /// Binds the next parameter in place.
    pub fn push(&mut self, value: impl IntoValue) {
        self.params.push(value.into_value());
    }

    /// The SQL text.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The SQL text as a shared string (drivers that need owned SQL clone this cheaply).
    pub fn shared_sql(&self) -> &Arc<str> {
        &self.sql
    }

    /// The parameters, in placeholder order.
    pub fn params(&self) -> &[Value] {
        &self.params
    }
}

/// A `COPY ... FROM STDIN` statement and its data, encoded in Postgres's text format.
///
/// Core encodes the rows, so a driver only streams bytes. Drivers without COPY report
/// [`Executor::supports_copy`](super::Executor::supports_copy) as false, and the engine falls back to
/// a multi-row `INSERT`.
#[derive(Debug, Clone)]
pub struct CopyIn {
    sql: Arc<str>,
    data: Vec<u8>,
    rows: u64,
}

impl CopyIn {
    /// A COPY of no rows yet; `sql` is `COPY table (cols) FROM STDIN` (text format).
    pub fn new(sql: impl Into<Arc<str>>) -> Self {
        CopyIn {
            sql: sql.into(),
            data: Vec::new(),
            rows: 0,
        }
    }

    /// Appends one row; values are in the order of the COPY's column list.
    pub fn push_row(&mut self, values: &[Value]) {
        let mut line = String::new();
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                line.push('\t');
            }
            encode_copy_field(&mut line, v);
        }
        line.push('\n');
        self.data.extend_from_slice(line.as_bytes());
        self.rows += 1;
    }

    /// Starts a row written field by field from borrowed data, without building [`Value`]s; the
    /// row is complete when the writer is dropped. Fields go in the order of the COPY's columns.
    pub fn row(&mut self) -> CopyRowWriter<'_> {
        self.rows += 1;
        CopyRowWriter {
            data: &mut self.data,
            first: true,
            scratch: String::new(),
        }
    }

    /// The COPY statement.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The COPY statement as a shared string.
    pub fn shared_sql(&self) -> &Arc<str> {
        &self.sql
    }

    /// The encoded rows.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Consumes the COPY into its encoded rows (for [`Executor::copy_in_stream`](super::Executor)).
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// How many rows were pushed.
    pub fn rows(&self) -> u64 {
        self.rows
    }
}

/// Writes one COPY row's fields straight into the buffer (see [`CopyIn::row`]).
#[derive(Debug)]
pub struct CopyRowWriter<'a> {
    data: &'a mut Vec<u8>,
    first: bool,
    scratch: String,
}

impl CopyRowWriter<'_> {
    fn separate(&mut self) {
        if !self.first {
            self.data.push(b'\t');
        }
        self.first = false;
    }

    /// A `text` field.
    pub fn text(&mut self, s: &str) -> &mut Self {
        self.separate();
        push_copy_escaped_bytes(self.data, s);
        self
    }

    /// An integer field (`smallint`, `integer` or `bigint`).
    pub fn int(&mut self, n: i64) -> &mut Self {
        self.separate();
        // Writing into a Vec cannot fail.
        let _ = write!(self.data, "{n}");
        self
    }

    /// A `jsonb` field.
    pub fn jsonb(&mut self, j: &serde_json::Value) -> &mut Self {
        self.separate();
        self.scratch.clear();
        let _ = write!(self.scratch, "{j}");
        push_copy_escaped_bytes(self.data, &self.scratch);
        self
    }

    /// A `text[]` field.
    pub fn text_array(&mut self, items: &[String]) -> &mut Self {
        self.separate();
        self.scratch = array_text(items.iter().map(|s| Some(s.clone())));
        let scratch = std::mem::take(&mut self.scratch);
        push_copy_escaped_bytes(self.data, &scratch);
        self.scratch = scratch;
        self
    }
}

impl Drop for CopyRowWriter<'_> {
    fn drop(&mut self) {
        self.data.push(b'\n');
    }
}

/// Appends `s` escaped for a COPY text-format field, copying unescaped runs whole.
fn push_copy_escaped_bytes(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        let escaped: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escaped);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Writes `s` escaped for a COPY text-format field.
fn push_copy_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

/// The text form Postgres accepts for a value (before COPY escaping); `None` for NULL.
fn text_form(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null(_) => return None,
        Value::Bool(b) => if *b { "t" } else { "f" }.to_owned(),
        Value::Int2(n) => n.to_string(),
        Value::Int4(n) => n.to_string(),
        Value::Int8(n) => n.to_string(),
        Value::Float8(f) => float_text(*f),
        Value::Text(s) => s.clone(),
        Value::Bytea(b) => {
            let mut s = String::with_capacity(2 + b.len() * 2);
            s.push_str("\\x");
            for byte in b {
                let _ = write!(s, "{byte:02x}");
            }
            s
        }
        Value::Jsonb(j) => j.to_string(),
        Value::Timestamptz(t) => t.format("%Y-%m-%d %H:%M:%S%.6f+00").to_string(),
        Value::Interval(d) => interval_text(*d),
        Value::TextArray(a) => array_text(a.iter().map(|s| Some(s.clone()))),
        Value::Int8Array(a) => array_text(a.iter().map(|n| Some(n.to_string()))),
        Value::JsonbArray(a) => array_text(a.iter().map(|j| Some(j.to_string()))),
        Value::TimestamptzArray(a) => array_text(
            a.iter()
                .map(|t| Some(t.format("%Y-%m-%d %H:%M:%S%.6f+00").to_string())),
        ),
    })
}

fn float_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else {
        format!("{f:?}")
    }
}

fn interval_text(d: chrono::TimeDelta) -> String {
    match d.num_microseconds() {
        Some(us) => format!("{us} microseconds"),
        None => format!("{} milliseconds", d.num_milliseconds()),
    }
}

/// A Postgres array literal, every element quoted.
fn array_text(items: impl Iterator<Item = Option<String>>) -> String {
    let mut s = String::from("{");
    for (i, item) in items.enumerate() {
        if i > 0 {
            s.push(',');
        }
        match item {
            None => s.push_str("NULL"),
            Some(v) => {
                s.push('"');
                for c in v.chars() {
                    if c == '"' || c == '\\' {
                        s.push('\\');
                    }
                    s.push(c);
                }
                s.push('"');
            }
        }
    }
    s.push('}');
    s
}

fn encode_copy_field(out: &mut String, v: &Value) {
    match text_form(v) {
        None => out.push_str("\\N"),
        Some(s) => push_copy_escaped(out, &s),
    }
}

/// The `<target>` of a `COPY <target> FROM STDIN` in text format with no options, the form core
/// writes (`"s".pgmill_job (state, queue, ..)`), after any leading `--` comment lines; `None` for
/// any other statement. For libraries that render the COPY statement themselves (diesel).
pub fn copy_target(sql: &str) -> Option<&str> {
    let mut rest = sql.trim_start();
    while rest.starts_with("--") {
        rest = rest
            .split_once('\n')
            .map_or("", |(_, after)| after)
            .trim_start();
    }
    let rest = rest.trim_end().trim_end_matches(';').trim_end();
    strip_prefix_ignore_case(rest, "COPY ")
        .and_then(|r| strip_suffix_ignore_case(r, " FROM STDIN"))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn strip_suffix_ignore_case<'a>(s: &'a str, suffix: &str) -> Option<&'a str> {
    let at = s.len().checked_sub(suffix.len())?;
    let tail = s.get(at..)?;
    tail.eq_ignore_ascii_case(suffix).then(|| &s[..at])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::PgType;

    #[test]
    fn copy_rows_escape_specials_and_nulls() {
        let mut c = CopyIn::new("COPY t FROM STDIN");
        c.push_row(&[
            Value::Text("a\tb\\c\nd".into()),
            Value::Null(PgType::Int8),
            Value::TextArray(vec!["x\"y".into(), "".into()]),
            Value::Bool(true),
        ]);
        assert_eq!(
            std::str::from_utf8(c.data()).unwrap(),
            "a\\tb\\\\c\\nd\t\\N\t{\"x\\\\\"y\",\"\"}\tt\n"
        );
        assert_eq!(c.rows(), 1);
    }

    #[test]
    fn row_writer_encodes_like_push_row() {
        let values = [
            Value::Text("a\tb\\c\nd\r".into()),
            Value::Int2(7),
            Value::Jsonb(serde_json::json!({"k": "v\t\\"})),
            Value::TextArray(vec!["x\"y".into(), "".into()]),
        ];
        let mut by_values = CopyIn::new("COPY t FROM STDIN");
        by_values.push_row(&values);
        let mut by_writer = CopyIn::new("COPY t FROM STDIN");
        by_writer
            .row()
            .text("a\tb\\c\nd\r")
            .int(7)
            .jsonb(&serde_json::json!({"k": "v\t\\"}))
            .text_array(&["x\"y".to_owned(), String::new()]);
        assert_eq!(by_writer.data(), by_values.data());
        assert_eq!(by_writer.rows(), 1);
    }

    #[test]
    fn floats_keep_precision_and_specials() {
        assert_eq!(float_text(0.1), "0.1");
        assert_eq!(float_text(f64::INFINITY), "Infinity");
        assert_eq!(float_text(f64::NAN), "NaN");
    }

    #[test]
    fn the_copy_target_is_what_lies_between_copy_and_from_stdin() {
        assert_eq!(
            copy_target("-- a comment\n-- another\nCOPY \"s\".t (a, b) FROM STDIN\n"),
            Some("\"s\".t (a, b)")
        );
        assert_eq!(copy_target("copy t from stdin;"), Some("t"));
        for sql in [
            "COPY t FROM STDIN (FORMAT csv)",
            "COPY t TO STDOUT",
            "SELECT 1",
            "COPY  FROM STDIN",
            "",
        ] {
            assert_eq!(copy_target(sql), None, "{sql:?}");
        }
    }
}
