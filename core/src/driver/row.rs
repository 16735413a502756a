//! Rows as drivers hand them to core, and the shapes core decodes them into.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::value::{FromValue, Value};
use crate::error::{Error, Result};

/// One result row: column names (shared by every row of a result) and their values.
#[derive(Debug, Clone)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
    /// Where the next lookup by name starts: just after the column found last, since rows are
    /// mostly read in column order.
    next: usize,
}

impl PartialEq for Row {
    /// Rows are equal when their columns and values are (wherever a lookup left off).
    fn eq(&self, other: &Self) -> bool {
        self.columns == other.columns && self.values == other.values
    }
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
        Row {
            columns,
            values,
            next: 0,
        }
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

    /// The position of column `name`, searched from just after the last one found.
    fn index(&mut self, name: &str) -> Result<usize> {
        let n = self.columns.len();
        // The usual case: the column after the last one found.
        if self.next < n && self.columns[self.next] == name {
            self.next += 1;
            return Ok(self.next - 1);
        }
        let start = self.next.min(n);
        let i = (start..n)
            .chain(0..start)
            .find(|&i| self.columns[i] == name)
            .ok_or_else(|| column_error(name, "no such column"))?;
        self.next = i + 1;
        Ok(i)
    }

    /// Reads column `name` as `T`, cloning it.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when the column is missing or has another type.
    pub fn get<T: FromValue>(&self, name: &str) -> Result<T> {
        let i = self
            .columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| column_error(name, "no such column"))?;
        T::from_value(self.values[i].clone()).map_err(|m| column_error(name, m))
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
        T::from_value(v).map_err(|m| column_error(name, m))
    }
}

/// One row of a result read in place, column by column, as the driver's library holds it: core
/// decodes its hottest row shape (a claimed job) through this instead of a [`Row`], which would
/// build a vector of values and look each one up by name first.
///
/// A driver implements [`RowView::value`] over its library's row with the per-column decoding it
/// builds a [`Row`] with, and may override the typed readers ([`RowView::int8`] and the rest)
/// to read a column straight into its Rust type through the library, skipping the [`Value`]; by
/// default they go through [`RowView::value`]. A typed reader accepts exactly its Postgres type
/// (core's SQL casts its output columns) and reads NULL as `None`. [`Row`] implements it too (for
/// the defaults of [`Executor::query_with`] and [`Executor::query_held`]).
///
/// [`Executor::query_with`]: super::Executor::query_with
/// [`Executor::query_held`]: super::Executor::query_held
pub trait RowView {
    /// How many columns the row has.
    fn width(&self) -> usize;

    /// The name of column `i` (`i < width()`).
    fn name(&self, i: usize) -> &str;

    /// Decodes column `i` (`i < width()`), by its type, into a [`Value`] it hands over.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] or a codec error when the column has a type pgmill does not read.
    fn value(&mut self, i: usize) -> Result<Value>;

    /// Column `i`, a `smallint`.
    ///
    /// # Errors
    ///
    /// A decode or codec error when the column has another type.
    fn int2(&mut self, i: usize) -> Result<Option<i16>> {
        through_value(self, i)
    }

    /// Column `i`, a `bigint`.
    ///
    /// # Errors
    ///
    /// A decode or codec error when the column has another type.
    fn int8(&mut self, i: usize) -> Result<Option<i64>> {
        through_value(self, i)
    }

    /// Column `i`, a `text`.
    ///
    /// # Errors
    ///
    /// A decode or codec error when the column has another type.
    fn text(&mut self, i: usize) -> Result<Option<String>> {
        through_value(self, i)
    }

    /// Column `i`, a `jsonb`.
    ///
    /// # Errors
    ///
    /// A decode or codec error when the column has another type.
    fn jsonb(&mut self, i: usize) -> Result<Option<serde_json::Value>> {
        through_value(self, i)
    }

    /// Column `i`, a `timestamptz`.
    ///
    /// # Errors
    ///
    /// A decode or codec error when the column has another type.
    fn timestamptz(&mut self, i: usize) -> Result<Option<DateTime<Utc>>> {
        through_value(self, i)
    }

    /// Column `i`, a `text[]`.
    ///
    /// # Errors
    ///
    /// A decode or codec error when the column has another type.
    fn text_array(&mut self, i: usize) -> Result<Option<Vec<String>>> {
        through_value(self, i)
    }

    /// Column `i`, a `jsonb[]`.
    ///
    /// # Errors
    ///
    /// A decode or codec error when the column has another type.
    fn jsonb_array(&mut self, i: usize) -> Result<Option<Vec<serde_json::Value>>> {
        through_value(self, i)
    }
}

/// A typed reader's default: the column's [`Value`], converted.
fn through_value<V: RowView + ?Sized, T: FromValue>(row: &mut V, i: usize) -> Result<Option<T>> {
    let value = row.value(i)?;
    Option::<T>::from_value(value).map_err(|m| column_error(row.name(i), m))
}

fn column_error(name: &str, message: impl Into<String>) -> Error {
    Error::decode(format!("column {name:?}"), message)
}

/// A Rust type read from one column of a [`RowView`] by its typed reader: `T` for a column that
/// must not be NULL, `Option<T>` for one that may be.
pub trait FromColumn: Sized {
    /// Reads column `i` of `row`.
    ///
    /// # Errors
    ///
    /// A decode or codec error when the column has another type, or is NULL for a `T`.
    fn from_column(row: &mut dyn RowView, i: usize) -> Result<Self>;
}

macro_rules! from_column {
    ($ty:ty, $reader:ident) => {
        impl FromColumn for Option<$ty> {
            fn from_column(row: &mut dyn RowView, i: usize) -> Result<Self> {
                row.$reader(i)
            }
        }

        impl FromColumn for $ty {
            fn from_column(row: &mut dyn RowView, i: usize) -> Result<Self> {
                row.$reader(i)?
                    .ok_or_else(|| column_error(row.name(i), "expected a value, found NULL"))
            }
        }
    };
}

from_column!(i16, int2);
from_column!(i64, int8);
from_column!(String, text);
from_column!(serde_json::Value, jsonb);
from_column!(DateTime<Utc>, timestamptz);
from_column!(Vec<String>, text_array);
from_column!(Vec<serde_json::Value>, jsonb_array);

impl dyn RowView + '_ {
    /// Reads column `i` as `T` through its typed reader.
    ///
    /// # Errors
    ///
    /// A decode or codec error when the column has another type, or is NULL for a `T` that is
    /// not an `Option`.
    pub fn read<T: FromColumn>(&mut self, i: usize) -> Result<T> {
        T::from_column(self, i)
    }

    /// Checks that the row's columns are `names`, in that order: a decoder reading by position
    /// calls this once per result.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] naming the first column that differs.
    pub fn expect_columns(&self, names: &[&str]) -> Result<()> {
        if self.width() != names.len() {
            return Err(Error::decode(
                "row",
                format!("{} columns, expected {}", self.width(), names.len()),
            ));
        }
        match (0..names.len()).find(|&i| self.name(i) != names[i]) {
            Some(i) => Err(Error::decode(
                format!("column {i}"),
                format!("named {:?}, expected {:?}", self.name(i), names[i]),
            )),
            None => Ok(()),
        }
    }
}

impl RowView for Row {
    fn width(&self) -> usize {
        self.values.len()
    }

    fn name(&self, i: usize) -> &str {
        &self.columns[i]
    }

    /// Takes the value out; the column reads NULL after.
    fn value(&mut self, i: usize) -> Result<Value> {
        let ty = self.values[i].pg_type();
        Ok(std::mem::replace(&mut self.values[i], Value::Null(ty)))
    }

    /// Copies the value: a number can be read again (rows held in [`HeldRows`] are read twice).
    fn int2(&mut self, i: usize) -> Result<Option<i16>> {
        self.copied(i)
    }

    /// Copies the value, as [`RowView::int2`] does.
    fn int8(&mut self, i: usize) -> Result<Option<i64>> {
        self.copied(i)
    }

    /// Copies the value, as [`RowView::int2`] does.
    fn timestamptz(&mut self, i: usize) -> Result<Option<DateTime<Utc>>> {
        self.copied(i)
    }
}

impl Row {
    /// Column `i` converted from a copy of its value, which stays in place.
    fn copied<T: FromValue>(&self, i: usize) -> Result<Option<T>> {
        Option::<T>::from_value(self.values[i].clone())
            .map_err(|m| column_error(&self.columns[i], m))
    }
}

/// A statement's rows as the driver's library returned them (or a copy of their fields), kept
/// to be read later: after the connection has gone on to its next statement, and on another
/// task than the one that ran it. The producer reads a claim's rows this way, so its next claim
/// is on its way to the server while it decodes the last one ([`Executor::query_held`]).
///
/// Rows can be read more than once: a `smallint`, `bigint` or `timestamptz` column read again
/// reads the same value ([`RowView::int2`], [`RowView::int8`], [`RowView::timestamptz`]) from
/// every source. Other columns may be handed over by their first read: on core's own [`Row`]s
/// (the default source) a `text`, `jsonb` or array column read a second time reads NULL, so
/// read each of those once.
///
/// [`Executor::query_held`]: super::Executor::query_held
pub struct HeldRows {
    source: Box<dyn RowSource>,
}

impl HeldRows {
    /// Holds `source`'s rows.
    pub fn new(source: impl RowSource) -> Self {
        HeldRows {
            source: Box::new(source),
        }
    }

    /// How many rows there are.
    pub fn len(&self) -> usize {
        self.source.len()
    }

    /// True when there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads every row in place through `read`, in the order the server sent them.
    ///
    /// # Errors
    ///
    /// The first error `read` returns.
    pub fn read_each(
        &mut self,
        mut read: impl FnMut(&mut dyn RowView) -> Result<()>,
    ) -> Result<()> {
        self.source.read_each(&mut read)
    }

    /// Decodes every row through `decode`, in the order the server sent them, into a vector of
    /// exactly their number.
    ///
    /// # Errors
    ///
    /// The first error `decode` returns.
    pub fn decode<T>(
        &mut self,
        mut decode: impl FnMut(&mut dyn RowView) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut decoded = Vec::with_capacity(self.len());
        self.read_each(|row| {
            decoded.push(decode(row)?);
            Ok(())
        })?;
        Ok(decoded)
    }
}

impl std::fmt::Debug for HeldRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldRows")
            .field("len", &self.len())
            .finish()
    }
}

/// Where [`HeldRows`] keeps a result: a driver implements it over its library's owned rows, or
/// a copy of their fields, each read through the same [`RowView`] its [`Executor::query_with`]
/// reads with. Core's own [`Row`]s implement it too ([`Executor::query_held`]'s default).
///
/// [`RowSource::len`] is the number of rows [`RowSource::read_each`] visits, and
/// [`RowSource::read_each`] may be called more than once: each call visits every row again, in
/// the same order, and a `smallint`, `bigint` or `timestamptz` column reads the same value every
/// time.
///
/// [`Executor::query_with`]: super::Executor::query_with
/// [`Executor::query_held`]: super::Executor::query_held
pub trait RowSource: Send + 'static {
    /// How many rows there are.
    fn len(&self) -> usize;

    /// True when there is no row.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads every row in place through `read`, in order.
    ///
    /// # Errors
    ///
    /// The first error `read` returns.
    fn read_each(&mut self, read: &mut dyn FnMut(&mut dyn RowView) -> Result<()>) -> Result<()>;
}

impl RowSource for Vec<Row> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn read_each(&mut self, read: &mut dyn FnMut(&mut dyn RowView) -> Result<()>) -> Result<()> {
        self.iter_mut().try_for_each(|row| read(row))
    }
}

/// Decodes core's rows through `decode`, each seen as a [`RowView`].
pub(crate) fn rows_with<T>(
    rows: Vec<Row>,
    mut decode: impl FnMut(&mut dyn RowView) -> Result<T>,
) -> Result<Vec<T>> {
    collect_exact(rows.len(), rows.into_iter().map(|mut r| decode(&mut r)))
}

/// Builds core's rows from one result of a library's rows: the column names are read once, from
/// the first row by `names`, and shared by every row; `values` decodes one row, in column order.
///
/// # Errors
///
/// The first error `values` returns.
pub fn decode_result<'r, R, I>(
    rows: &'r [R],
    names: impl FnOnce(&'r R) -> I,
    values: impl FnMut(&'r R) -> Result<Vec<Value>>,
) -> Result<Vec<Row>>
where
    I: IntoIterator<Item = &'r str>,
{
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let columns: Arc<[String]> = names(first).into_iter().map(str::to_owned).collect();
    collect_exact(
        rows.len(),
        rows.iter()
            .map(values)
            .map(|row| Ok(Row::new(Arc::clone(&columns), row?))),
    )
}

/// Decodes every row as `T`, into a vector of exactly their number.
///
/// # Errors
///
/// The first decoding error.
pub(crate) fn rows_as<T>(rows: Vec<Row>, decode: impl FnMut(Row) -> Result<T>) -> Result<Vec<T>> {
    collect_exact(rows.len(), rows.into_iter().map(decode))
}

/// Collects `len` fallible items into a vector of exactly that size (collecting a fallible
/// iterator straight into a `Vec` cannot see its length, so it grows the vector step by step).
fn collect_exact<T>(len: usize, items: impl Iterator<Item = Result<T>>) -> Result<Vec<T>> {
    let mut collected = Vec::with_capacity(len);
    for item in items {
        collected.push(item?);
    }
    Ok(collected)
}

/// Decodes the `width` values of one row, in column order, into a vector of exactly that size
/// (collecting fallible decodes straight into a `Vec` cannot see the length, so it grows the
/// vector two or three times per row).
///
/// # Errors
///
/// The first error `column` returns.
pub fn decode_values(
    width: usize,
    column: impl FnMut(usize) -> Result<Value>,
) -> Result<Vec<Value>> {
    collect_exact(width, (0..width).map(column))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_shares_its_column_names_and_keeps_row_order() {
        let library_rows = [("a", 1_i64), ("b", 2)];
        let rows = decode_result(
            &library_rows,
            |_| ["name", "n"],
            |(name, n)| Ok(vec![Value::Text((*name).into()), Value::Int8(*n)]),
        )
        .unwrap();
        assert_eq!(rows[1].get::<i64>("n").unwrap(), 2);
        assert!(std::ptr::eq(rows[0].columns(), rows[1].columns()));
        let none: [(); 0] = [];
        let values = decode_values(13, |i| Ok(Value::Int8(i as i64))).unwrap();
        assert_eq!((values.len(), values.capacity()), (13, 13));
        assert!(decode_values(2, |_| Err(Error::decode("x", "bad"))).is_err());
        assert!(
            decode_result(&none, |_| ["x"], |_| Ok(vec![]))
                .unwrap()
                .is_empty()
        );
    }

    /// The default source of held rows (core's rows) reads numbers and timestamps again as
    /// they were, as a claim's rows are read: the position first, then every column.
    #[test]
    fn held_core_rows_read_numbers_and_times_twice() {
        let at = DateTime::from_timestamp(1_700_000_000, 5_000).unwrap();
        let rows = decode_result(
            &[(1_i64, 2_i16, "a"), (3, 4, "b")],
            |_| ["id", "priority", "at", "kind"],
            |(id, priority, kind)| {
                Ok(vec![
                    Value::Int8(*id),
                    Value::Int2(*priority),
                    Value::Timestamptz(at),
                    Value::Text((*kind).into()),
                ])
            },
        )
        .unwrap();
        let mut held = HeldRows::new(rows);
        assert_eq!(held.len(), 2);
        let mut positions = Vec::new();
        held.read_each(|row| {
            positions.push((row.int8(0)?, row.int2(1)?, row.timestamptz(2)?));
            Ok(())
        })
        .unwrap();
        let decoded = held
            .decode(|row| {
                Ok((
                    row.int8(0)?,
                    row.int2(1)?,
                    row.timestamptz(2)?,
                    row.text(3)?,
                ))
            })
            .unwrap();
        assert_eq!(
            positions,
            vec![(Some(1), Some(2), Some(at)), (Some(3), Some(4), Some(at))]
        );
        assert_eq!(
            decoded,
            vec![
                (Some(1), Some(2), Some(at), Some("a".to_owned())),
                (Some(3), Some(4), Some(at), Some("b".to_owned())),
            ]
        );
    }

    #[test]
    fn a_row_seen_in_place_reads_by_position_and_checks_its_names() {
        let rows = decode_result(
            &[(7_i64, "a")],
            |_| ["n", "name"],
            |(n, name)| Ok(vec![Value::Int8(*n), Value::Text((*name).into())]),
        )
        .unwrap();
        let read = rows_with(rows.clone(), |row| {
            row.expect_columns(&["n", "name"])?;
            Ok((row.read::<i64>(0)?, row.read::<String>(1)?))
        })
        .unwrap();
        assert_eq!(read, vec![(7, "a".to_owned())]);
        let renamed = rows_with(rows.clone(), |row| row.expect_columns(&["n", "label"]));
        assert!(renamed.unwrap_err().to_string().contains("\"label\""));
        let narrower = rows_with(rows.clone(), |row| row.expect_columns(&["n"]));
        assert!(narrower.is_err());
        let mistyped = rows_with(rows.clone(), |row| row.read::<i16>(0));
        assert!(mistyped.unwrap_err().to_string().contains("\"n\""));
        let nulls = decode_result(
            &[()],
            |_| ["n"],
            |_| Ok(vec![Value::Null(super::super::PgType::Int8)]),
        )
        .unwrap();
        assert_eq!(
            rows_with(nulls.clone(), |row| row.read::<Option<i64>>(0)).unwrap(),
            vec![None]
        );
        let required = rows_with(nulls, |row| row.read::<i64>(0)).unwrap_err();
        assert!(required.to_string().contains("NULL"), "{required}");
    }
}
