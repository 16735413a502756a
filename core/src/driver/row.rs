//! Rows as drivers hand them to core, and the shapes core decodes them into.

use std::sync::Arc;

use super::value::{FromValue, Value};
use crate::error::{Error, Result};

/// One result row: column names (shared by every row of a result) and their values.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

impl Row {
    /// Builds a row; `values` are in the order of `columns`.
    ///
    /// # Panics
    ///
    /// Panics when the two lengths differ, which is a driver bug.
    pub fn new(columns: Arc<[String]>, values: Vec<Value>) -> Self {
        assert_eq!(
            columns.len(),
            values.len(),
            "row has as many values as columns"
        );
        Row { columns, values }
    }

    /// The column names, in order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The values, in column order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// Consumes the row into its values.
    pub fn into_values(self) -> Vec<Value> {
        self.values
    }

    fn index(&self, name: &str) -> Result<usize> {
        self.columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| Error::decode(format!("column {name:?}"), "no such column"))
    }

    /// Reads column `name` as `T`, cloning it.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when the column is missing or has another type.
    pub fn get<T: FromValue>(&self, name: &str) -> Result<T> {
        let i = self.index(name)?;
        T::from_value(self.values[i].clone())
            .map_err(|m| Error::decode(format!("column {name:?}"), m))
    }

    /// Takes column `name` out of the row as `T` without cloning; the column reads NULL after.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when the column is missing or has another type.
    pub fn take<T: FromValue>(&mut self, name: &str) -> Result<T> {
        let i = self.index(name)?;
        let ty = self.values[i].pg_type();
        let v = std::mem::replace(&mut self.values[i], Value::Null(ty));
        T::from_value(v).map_err(|m| Error::decode(format!("column {name:?}"), m))
    }
}

/// A row shape core decodes query results into.
pub trait FromRow: Sized {
    /// Decodes one row.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when a column is missing or has another type.
    fn from_row(row: Row) -> Result<Self>;
}

impl FromRow for Row {
    fn from_row(row: Row) -> Result<Self> {
        Ok(row)
    }
}
