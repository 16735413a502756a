//! `pgmill serve`: runs the web dashboard (`pgmill-web`) on its own, over the admin driver.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use pgmill_web::{Auth, Dashboard};

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::Output;

/// Connections the dashboard's pool may open (the overview runs three queries at once).
const SERVE_POOL_SIZE: u32 = 4;

/// The options of `pgmill serve`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on. Binding beyond loopback needs authentication (or
    /// --allow-no-auth).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,
    /// Hide and refuse every action: look, do not touch.
    #[arg(long)]
    pub(crate) read_only: bool,
    /// Require `Authorization: Bearer <TOKEN>` on every request.
    #[arg(
        long,
        env = "PGMILL_WEB_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub(crate) token: Option<String>,
    /// Require HTTP basic auth as `user:password` (browsers ask for it).
    #[arg(
        long,
        env = "PGMILL_WEB_BASIC_AUTH",
        hide_env_values = true,
        value_name = "USER:PASSWORD",
        conflicts_with = "token"
    )]
    pub(crate) basic_auth: Option<String>,
    /// Serve a non-loopback address without authentication.
    #[arg(long)]
    pub(crate) allow_no_auth: bool,
    /// Seconds between live refreshes of a page (0: off).
    #[arg(long, value_name = "SECONDS", default_value_t = 2)]
    pub(crate) refresh: u64,
}

impl ServeArgs {
    /// The authentication asked for, if any.
    fn auth(&self) -> Result<Option<Auth>, CliError> {
        let auth = match (&self.token, &self.basic_auth) {
            (Some(t), _) => Some(Auth::bearer(t.clone())),
            (None, Some(b)) => Some(Auth::parse_basic(b)),
            (None, None) => None,
        };
        auth.transpose().map_err(|e| CliError::new(e.to_string()))
    }
}

/// Serves the dashboard until Ctrl-C or SIGTERM.
///
/// # Errors
///
/// Bad options, the connection error, a schema that is not migrated, or an address in use.
pub(crate) async fn run(args: ServeArgs, ctx: &CommandContext) -> Result<Output, CliError> {
    let auth = args.auth()?;
    if auth.is_none() && !args.listen.ip().is_loopback() && !args.allow_no_auth {
        return Err(CliError::new(format!(
            "refusing to serve {} without authentication: set PGMILL_WEB_TOKEN or \
             PGMILL_WEB_BASIC_AUTH, or pass --allow-no-auth",
            args.listen
        )));
    }
    let client = ctx.client_with_pool(SERVE_POOL_SIZE).await?;
    // Fail now, not on the first page, when the schema is not there.
    client.queue_list().await.map_err(|e| {
        CliError::new(format!(
            "cannot read schema {:?} ({}); is it migrated (pgmill migrate up)?",
            ctx.schema,
            CliError::from(e)
        ))
    })?;
    let mut dashboard = Dashboard::new(client)
        .read_only(args.read_only)
        .refresh_interval(Duration::from_secs(args.refresh));
    if let Some(auth) = auth {
        dashboard = dashboard.auth(auth);
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| CliError::new(format!("cannot listen on {}: {e}", args.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::new(e.to_string()))?;
    eprintln!(
        "pgmill: dashboard for schema {:?} on http://{addr}/{}",
        ctx.schema,
        if args.read_only { " (read-only)" } else { "" }
    );
    axum::serve(listener, dashboard.router())
        .with_graceful_shutdown(shutdown())
        .await
        .map_err(|e| CliError::new(format!("dashboard server failed: {e}")))?;
    Ok(Output::Text("pgmill: dashboard stopped".into()))
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrap {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        Wrap::try_parse_from(std::iter::once("serve").chain(args.iter().copied())).map(|w| w.serve)
    }

    #[test]
    fn listens_on_loopback_by_default_and_takes_one_auth() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.listen, "127.0.0.1:8080".parse().unwrap());
        assert!(!a.read_only);
        let a = parse(&["--basic-auth", "ops:pw", "--read-only"]).unwrap();
        assert!(a.read_only);
        assert!(matches!(a.auth().unwrap(), Some(Auth::Basic { .. })));
        assert!(parse(&["--basic-auth", "a:b", "--token", "t"]).is_err());
        assert!(parse(&["--basic-auth", "nocolon"]).unwrap().auth().is_err());
        assert!(parse(&["--listen", "nope"]).is_err());
    }
}
