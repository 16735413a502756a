//! The results as a Markdown table, ready to paste into docs/benchmarks.md.

/// A Markdown table: a header row, an alignment row, then one row per result.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct MarkdownTable {
    headers: Vec<String>,
    numeric: Vec<usize>,
    rows: Vec<Vec<String>>,
}

impl MarkdownTable {
    /// A table with these headers; the columns at `numeric` are right-aligned.
    pub(crate) fn new<S: Into<String>>(
        headers: impl IntoIterator<Item = S>,
        numeric: impl IntoIterator<Item = usize>,
    ) -> Self {
        MarkdownTable {
            headers: headers.into_iter().map(Into::into).collect(),
            numeric: numeric.into_iter().collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; `|` inside a cell is escaped.
    pub(crate) fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(
            cells
                .into_iter()
                .map(|c| c.into().replace('|', "\\|"))
                .collect(),
        );
    }

    /// The table as Markdown text.
    pub(crate) fn render(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let mut out = line(&self.headers);
        let rule: Vec<String> = (0..self.headers.len())
            .map(|i| {
                if self.numeric.contains(&i) {
                    "---:"
                } else {
                    "---"
                }
                .to_owned()
            })
            .collect();
        out.push_str(&line(&rule));
        for row in &self.rows {
            let mut cells = row.clone();
            cells.resize(self.headers.len(), String::new());
            out.push_str(&line(&cells));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_markdown_with_numbers_right_aligned() {
        let mut t = MarkdownTable::new(["workload", "jobs/s"], [1]);
        t.row(["w1|bulk", "12"]);
        t.row(["w2"]);
        assert_eq!(
            t.render(),
            "| workload | jobs/s |\n| --- | ---: |\n| w1\\|bulk | 12 |\n| w2 |  |\n"
        );
    }
}
