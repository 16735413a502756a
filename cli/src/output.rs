//! The output layer: the only place that writes to stdout.
//!
//! Commands build an [`Output`] (text, a table, or JSON) and `main` prints it. Errors go to
//! stderr elsewhere.

use std::io::Write;

/// What a command prints on success.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Output {
    /// Plain text, printed as is with a final newline.
    Text(String),
    /// A table for people.
    Table(Table),
    /// One JSON document, on one line.
    Json(serde_json::Value),
}

/// A table of left-aligned text columns, with an optional line after it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    footer: Option<String>,
    right_aligned: Vec<usize>,
}

impl Table {
    /// A table with these column headers.
    pub(crate) fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Self {
        Table {
            headers: headers.into_iter().map(Into::into).collect(),
            ..Table::default()
        }
    }

    /// Right-aligns the columns at these indexes (numbers).
    pub(crate) fn right_align(mut self, columns: impl IntoIterator<Item = usize>) -> Self {
        self.right_aligned = columns.into_iter().collect();
        self
    }

    /// Adds a row (missing cells print empty).
    pub(crate) fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Sets a line printed under the table.
    pub(crate) fn footer(&mut self, line: impl Into<String>) {
        self.footer = Some(line.into());
    }

    /// True when the table has no rows.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text, columns padded to their widest cell, two spaces apart.
    pub(crate) fn render(&self) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = cells.get(i).map_or("", String::as_str);
                let pad = width - cell.chars().count();
                if i > 0 {
                    out.push_str("  ");
                }
                if self.right_aligned.contains(&i) {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(cell);
                } else {
                    out.push_str(cell);
                    if i + 1 < widths.len() {
                        out.push_str(&" ".repeat(pad));
                    }
                }
            }
            out.trim_end().to_owned()
        };
        let mut out = line(&self.headers);
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        if let Some(footer) = &self.footer {
            out.push_str(footer);
            out.push('\n');
        }
        out
    }
}

/// A time for people, to the second (UTC).
pub(crate) fn time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Prints a command's output to stdout.
pub(crate) fn print(output: &Output) {
    match output {
        Output::Text(text) if text.ends_with('\n') => write_stdout(text),
        Output::Text(text) => write_stdout(&format!("{text}\n")),
        Output::Table(table) => write_stdout(&table.render()),
        Output::Json(value) => print_json_line(value),
    }
}

/// Prints one JSON document on its own line and flushes, so a reader sees it at once.
pub(crate) fn print_json_line(value: &serde_json::Value) {
    write_stdout(&format!("{value}\n"));
}

fn write_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`pgmill job list | head`) is not an error worth a panic.
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_columns_and_align_numbers() {
        let mut t = Table::new(["NAME", "JOBS", "NOTE"]).right_align([1]);
        t.row(["default", "12", "ok"]);
        t.row(["mail", "3", ""]);
        t.footer("2 queues");
        assert_eq!(
            t.render(),
            "NAME     JOBS  NOTE\ndefault    12  ok\nmail        3\n2 queues\n"
        );
        assert!(!t.is_empty());
    }
}
