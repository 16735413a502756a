//! The schema pgmill's tables live in, and the rendering of SQL templates into it.

use std::fmt;
use std::sync::Arc;

use crate::driver::Statement;
use crate::error::Result;
use crate::ident::{quote_ident, validate_schema_name};
use crate::query::catalog::Query;

/// The marker core's SQL templates use where the schema name goes.
pub(crate) const SCHEMA_MARKER: &str = "{schema}";

/// A validated schema holding pgmill's tables, with every engine query rendered into it once.
///
/// SQL never relies on `search_path`: statements also run on the application's own connections,
/// whose `search_path` pgmill does not control. Cloning is cheap.
///
/// # Examples
///
/// ```
/// let schema = pgmill::Schema::new("jobs").unwrap();
/// assert_eq!(schema.quoted(), "\"jobs\"");
/// assert!(pgmill::Schema::new("no spaces").is_err());
/// ```
#[derive(Clone)]
pub struct Schema {
    inner: Arc<SchemaInner>,
}

struct SchemaInner {
    name: String,
    quoted: String,
    queries: Box<[Arc<str>]>,
}

impl Schema {
    /// Validates `name` and renders every query into it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`](crate::Error::InvalidName) unless the name is 1 to 45 ASCII letters,
    /// digits and `_`, not starting with a digit.
    pub fn new(name: &str) -> Result<Self> {
        validate_schema_name(name)?;
        let quoted = quote_ident(name);
        let queries = Query::ALL
            .iter()
            .map(|q| Arc::from(q.compacted().replace(SCHEMA_MARKER, &quoted)))
            .collect();
        Ok(Schema {
            inner: Arc::new(SchemaInner {
                name: name.to_owned(),
                quoted,
                queries,
            }),
        })
    }

    /// The `public` schema.
    pub fn public() -> Self {
        Schema::new("public").expect("public is a valid schema name")
    }

    /// The schema's name, unquoted.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The schema's name quoted for SQL.
    pub fn quoted(&self) -> &str {
        &self.inner.quoted
    }

    /// Renders a SQL template (migrations, user scripts) into this schema.
    pub fn render(&self, template: &str) -> String {
        template.replace(SCHEMA_MARKER, &self.inner.quoted)
    }

    /// A notification channel scoped to this schema: `<schema>.<topic>`.
    pub fn channel(&self, topic: &str) -> String {
        format!("{}.{}", self.inner.name, topic)
    }

    /// A statement for an engine query, rendered into this schema, with no parameters bound yet.
    pub(crate) fn statement(&self, query: Query) -> Statement {
        Statement::with_capacity(
            Arc::clone(&self.inner.queries[query as usize]),
            query.param_count(),
        )
    }
}

impl Default for Schema {
    fn default() -> Self {
        Schema::public()
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Schema").field(&self.inner.name).finish()
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.inner.name == other.inner.name
    }
}

impl Eq for Schema {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_is_rendered_without_a_marker_left() {
        let s = Schema::new("tenant_a").unwrap();
        for q in Query::ALL {
            let sql = s.statement(*q).sql().to_owned();
            assert!(!sql.contains(SCHEMA_MARKER), "{q:?}");
        }
    }

    #[test]
    fn channels_are_prefixed_with_the_schema() {
        let s = Schema::new("a").unwrap();
        assert_eq!(s.channel("pgmill_insert"), "a.pgmill_insert");
    }
}
