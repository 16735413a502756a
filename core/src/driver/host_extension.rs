//! The extension trait every driver adds to its library's connection type, written once.
//!
//! The orphan rule keeps a driver crate from implementing core's traits for sqlx's, tokio-postgres's
//! or diesel's types, and keeps core from offering a blanket impl for them; so each driver declares
//! a trait of its own. [`host_extension_trait!`](crate::driver::host_extension_trait) declares it:
//! the driver names the trait and writes the one method only it can, `pgmill()`, which wraps the
//! connection in its executor; the insert methods are provided, the same on every driver.

/// Declares a driver's extension trait on the application's own connection type.
///
/// The driver writes the trait's name, docs and supertraits (identifiers joined by `+`), and the
/// signature of `pgmill()`, which borrows the connection as one of the driver's executors. The
/// macro adds the provided methods `insert_job`, `insert_job_with` and `insert_jobs`, which run
/// [`Inserter::insert`](crate::Inserter::insert), [`Inserter::insert_with`](crate::Inserter::insert_with)
/// and [`Inserter::insert_many`](crate::Inserter::insert_many) on that executor: `async` for an
/// [`Executor`](crate::driver::Executor) (the trait needs `Send` among its supertraits), `blocking`
/// for a [`BlockingExecutor`](crate::driver::BlockingExecutor) (calling the `_blocking` twins). The
/// driver then implements `pgmill()` for its library's type, and nothing else.
///
/// # Examples
///
/// A driver whose executor wraps a `&mut Conn`:
///
/// ```no_run
/// use pgmill::Result;
/// use pgmill::driver::{Executor, Row, Statement, Transaction};
///
/// /// The library's own connection type.
/// pub struct Conn;
///
/// /// The driver's executor over it (its own transaction type too, to keep this short).
/// pub struct ConnExecutor<'a>(&'a mut Conn);
///
/// impl Executor for ConnExecutor<'_> {
///     type Transaction<'t>
///         = ConnExecutor<'t>
///     where
///         Self: 't;
///     // The library's calls go here.
///     # async fn execute(&mut self, _: &Statement) -> Result<u64> { todo!() }
///     # async fn query(&mut self, _: &Statement) -> Result<Vec<Row>> { todo!() }
///     # async fn execute_script(&mut self, _: &str) -> Result<()> { todo!() }
///     # async fn begin(&mut self) -> Result<ConnExecutor<'_>> { todo!() }
/// }
/// # impl Transaction for ConnExecutor<'_> {
/// #     async fn commit(self) -> Result<()> { todo!() }
/// #     async fn rollback(self) -> Result<()> { todo!() }
/// # }
///
/// pgmill::driver::host_extension_trait! {
///     async;
///     /// pgmill on the application's own `Conn`.
///     pub trait ConnExt: Send {
///         /// Borrows this connection as a pgmill executor.
///         fn pgmill(&mut self) -> ConnExecutor<'_>;
///     }
/// }
///
/// impl ConnExt for Conn {
///     fn pgmill(&mut self) -> ConnExecutor<'_> {
///         ConnExecutor(self)
///     }
/// }
///
/// # async fn run(conn: &mut Conn, inserter: &pgmill::Inserter) -> Result<()> {
/// // The application's code:
/// let jobs = conn.insert_jobs(inserter, &[]).await?;
/// # Ok(())
/// # }
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! host_extension_trait {
    (
        async;
        $(#[$attr:meta])*
        $vis:vis trait $name:ident $(: $bound:ident $(+ $bounds:ident)*)? {
            $(#[$pgmill_attr:meta])*
            fn pgmill(&mut self) -> $executor:ty;
        }
    ) => {
        $(#[$attr])*
        $vis trait $name $(: $bound $(+ $bounds)*)? {
            $(#[$pgmill_attr])*
            fn pgmill(&mut self) -> $executor;

            /// Inserts one job with its kind's default options
            /// ([`Inserter::insert`](pgmill::Inserter::insert)).
            ///
            /// # Errors
            ///
            /// A validation error or the database error.
            fn insert_job<A: $crate::JobArgs>(
                &mut self,
                inserter: &$crate::Inserter,
                args: A,
            ) -> impl ::core::future::Future<Output = $crate::Result<$crate::InsertResult>> + Send {
                async move { inserter.insert(&mut self.pgmill(), args).await }
            }

            /// Inserts one job with options over its kind's defaults
            /// ([`Inserter::insert_with`](pgmill::Inserter::insert_with)).
            ///
            /// # Errors
            ///
            /// A validation error or the database error.
            fn insert_job_with<A: $crate::JobArgs>(
                &mut self,
                inserter: &$crate::Inserter,
                args: A,
                opts: $crate::InsertOpts,
            ) -> impl ::core::future::Future<Output = $crate::Result<$crate::InsertResult>> + Send {
                async move { inserter.insert_with(&mut self.pgmill(), args, opts).await }
            }

            /// Inserts many jobs in one round trip and returns what happened to each, in input order
            /// ([`Inserter::insert_many`](pgmill::Inserter::insert_many)).
            ///
            /// # Errors
            ///
            /// A validation error (then nothing is inserted) or the database error.
            fn insert_jobs(
                &mut self,
                inserter: &$crate::Inserter,
                jobs: &[$crate::InsertParams],
            ) -> impl ::core::future::Future<Output = $crate::Result<::std::vec::Vec<$crate::InsertResult>>>
                   + Send {
                async move { inserter.insert_many(&mut self.pgmill(), jobs).await }
            }
        }
    };
    (
        blocking;
        $(#[$attr:meta])*
        $vis:vis trait $name:ident $(: $bound:ident $(+ $bounds:ident)*)? {
            $(#[$pgmill_attr:meta])*
            fn pgmill(&mut self) -> $executor:ty;
        }
    ) => {
        $(#[$attr])*
        $vis trait $name $(: $bound $(+ $bounds)*)? {
            $(#[$pgmill_attr])*
            fn pgmill(&mut self) -> $executor;

            /// Inserts one job with its kind's default options, in the connection's current
            /// transaction ([`Inserter::insert`](pgmill::Inserter::insert)).
            ///
            /// # Errors
            ///
            /// A validation error or the database error.
            fn insert_job<A: $crate::JobArgs>(
                &mut self,
                inserter: &$crate::Inserter,
                args: A,
            ) -> $crate::Result<$crate::InsertResult> {
                inserter.insert_blocking(&mut self.pgmill(), args)
            }

            /// Inserts one job with options over its kind's defaults
            /// ([`Inserter::insert_with`](pgmill::Inserter::insert_with)).
            ///
            /// # Errors
            ///
            /// A validation error or the database error.
            fn insert_job_with<A: $crate::JobArgs>(
                &mut self,
                inserter: &$crate::Inserter,
                args: A,
                opts: impl ::core::convert::Into<::core::option::Option<$crate::InsertOpts>>,
            ) -> $crate::Result<$crate::InsertResult> {
                inserter.insert_with_blocking(&mut self.pgmill(), args, opts)
            }

            /// Inserts many jobs in one round trip and returns what happened to each, in input order
            /// ([`Inserter::insert_many`](pgmill::Inserter::insert_many)).
            ///
            /// # Errors
            ///
            /// A validation error (then nothing is inserted) or the database error.
            fn insert_jobs(
                &mut self,
                inserter: &$crate::Inserter,
                jobs: &[$crate::InsertParams],
            ) -> $crate::Result<::std::vec::Vec<$crate::InsertResult>> {
                inserter.insert_many_blocking(&mut self.pgmill(), jobs)
            }
        }
    };
}
