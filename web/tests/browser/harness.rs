//! What every browser test works with: a migrated schema, the dashboard served on a free port
//! (nested under `/admin`, as an application would), and a browser driven by chromedriver.

use std::net::TcpListener as StdListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{ClientBuilder, Locator};
use pgmill::{Client, Schema};
use pgmill_driver_tokio_postgres::TokioPostgresDriver;
use pgmill_testdb::eventually;
use pgmill_web::Dashboard;
use serde_json::{Value, json};

/// How long a test waits for a condition before failing.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// Chromium's flags: headless, and nothing that reaches for the (closed) network.
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
];

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A chromedriver process of this test, in a process group of its own with the browsers it
/// starts; dropping it kills that group and deletes the browser profile.
pub(crate) struct ChromeDriver {
    child: Child,
    port: u16,
    profile: PathBuf,
}

impl ChromeDriver {
    fn start(binary: &Path) -> Self {
        let port = free_port();
        let child = Command::new(binary)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let profile =
            std::env::temp_dir().join(format!("pgmill-web-chromium-{}-{port}", std::process::id()));
        ChromeDriver {
            child,
            port,
            profile,
        }
    }
}

/// The browser and its driver, found before a test starts anything: on a machine without them,
/// each browser test fails at once with one line naming them and their install command
/// (`PGMILL_TEST_CHROMIUM` and `PGMILL_TEST_CHROMEDRIVER` give their paths instead).
pub(crate) struct BrowserPrograms {
    chromium: PathBuf,
    chromedriver: PathBuf,
}

impl BrowserPrograms {
    #[track_caller]
    pub(crate) fn require() -> Self {
        BrowserPrograms {
            chromedriver: pgmill_testdb::require_program("chromedriver"),
            chromium: pgmill_testdb::require_program("chromium"),
        }
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        // The whole group: chromedriver and the browser processes it started.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// A browser session (and the chromedriver behind it).
pub(crate) struct Browser {
    pub(crate) c: fantoccini::Client,
    _driver: ChromeDriver,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium.
    pub(crate) async fn start() -> Self {
        let programs = BrowserPrograms::require();
        let driver = ChromeDriver::start(&programs.chromedriver);
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| (*s).to_owned()).collect();
        args.push(format!("--user-data-dir={}", driver.profile.display()));
        let caps = json!({
            "goog:chromeOptions": { "binary": programs.chromium, "args": args },
            "pageLoadStrategy": "normal",
        });
        let caps = caps.as_object().unwrap().clone();
        let url = format!("http://127.0.0.1:{}", driver.port);
        let mut session = None;
        for _ in 0..100 {
            match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(c) => {
                    session = Some(c);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        Browser {
            c: session.expect("chromedriver answers and starts chromium"),
            _driver: driver,
        }
    }

    /// Opens a URL.
    pub(crate) async fn goto(&self, url: &str) {
        self.c.goto(url).await.expect("page loads");
    }

    /// The text of the first element matching `css`, waiting for it to appear. Live refresh can
    /// replace the element between finding it and reading it: then it is found again, until
    /// [`PATIENCE`] runs out.
    pub(crate) async fn text(&self, css: &str) -> String {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let element = self
                .c
                .wait()
                .at_most(PATIENCE)
                .for_element(Locator::Css(css))
                .await
                .unwrap_or_else(|e| panic!("no {css}: {e}"));
            match element.text().await {
                Ok(text) => return text,
                Err(e) => assert!(
                    std::time::Instant::now() < deadline,
                    "cannot read {css}: {e}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clicks the first element matching `css`. Live refresh re-renders parts of a page, so an
    /// element found a moment ago can be stale by the time it is clicked: find it again and retry
    /// until [`PATIENCE`] runs out.
    pub(crate) async fn click(&self, css: &str) {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let error = match self.c.find(Locator::Css(css)).await {
                Ok(element) => match element.click().await {
                    Ok(_) => return,
                    Err(e) => e,
                },
                Err(e) => e,
            };
            assert!(
                std::time::Instant::now() < deadline,
                "cannot click {css}: {error}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// How many elements match `css`.
    pub(crate) async fn count(&self, css: &str) -> usize {
        self.c.find_all(Locator::Css(css)).await.unwrap().len()
    }

    /// Runs JavaScript in the page and returns its result.
    pub(crate) async fn js(&self, script: &str) -> Value {
        self.c.execute(script, vec![]).await.expect("script runs")
    }

    /// Waits until the JavaScript expression `expr` is true.
    pub(crate) async fn until(&self, expr: &str) {
        let script = format!("return ({expr}) === true");
        let ok = eventually(PATIENCE, async || self.js(&script).await == json!(true)).await;
        assert!(ok, "never true in the page: {expr}");
    }

    /// Saves a screenshot of the page as `<name>.png` under the tests' screenshot folder.
    pub(crate) async fn screenshot(&self, name: &str) {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pgmill-web-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let png = self.c.screenshot().await.expect("screenshot");
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    /// Ends the session (the drop of the chromedriver then kills what is left).
    pub(crate) async fn close(self) {
        let _ = self.c.close().await;
    }
}

/// A fresh migrated schema, a client over it, and the dashboard served for it.
pub(crate) struct Env {
    /// The dashboard's client (it works no queue).
    pub(crate) client: Client<TokioPostgresDriver>,
    /// The driver, for more clients.
    pub(crate) driver: TokioPostgresDriver,
    /// The schema.
    pub(crate) schema: Schema,
    /// The dashboard's URL, without a trailing slash.
    pub(crate) base: String,
    server: tokio::task::JoinHandle<()>,
}

impl Env {
    /// A dashboard with actions.
    pub(crate) async fn start() -> Self {
        Self::with(|d| d).await
    }

    /// A dashboard adjusted by `adjust`. Every test here opens a browser on it, so the browser's
    /// programs are looked for first, before the database.
    pub(crate) async fn with(
        adjust: impl FnOnce(Dashboard<TokioPostgresDriver>) -> Dashboard<TokioPostgresDriver>,
    ) -> Self {
        BrowserPrograms::require();
        let driver = TokioPostgresDriver::connect(&pgmill_testdb::url(), 8)
            .await
            .expect("connects");
        let schema = Schema::new(&pgmill_testdb::fresh_schema_name()).unwrap();
        let client = Client::builder(driver.clone())
            .schema(schema.clone())
            .build()
            .unwrap();
        client.migrate().await.expect("migrates");
        let dashboard =
            adjust(Dashboard::new(client.clone()).refresh_interval(Duration::from_millis(250)));
        let app = axum::Router::new().nest("/admin", dashboard.router());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/admin", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Env {
            client,
            driver,
            schema,
            base,
            server,
        }
    }

    /// The URL of a dashboard path.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A client over the same schema, polling and electing fast, to be built further.
    pub(crate) fn worker_client(&self) -> pgmill::ClientBuilder<TokioPostgresDriver> {
        let mut elector = pgmill::ElectorConfig::default();
        elector.interval = Duration::from_millis(100);
        elector.lease = Duration::from_secs(2);
        Client::builder(self.driver.clone())
            .schema(self.schema.clone())
            .poll_interval(Duration::from_millis(50))
            .elector(elector)
    }

    /// Runs SQL on the schema (`{schema}` is replaced).
    pub(crate) async fn sql(&self, sql: &str) {
        use pgmill::driver::{Driver, Executor};
        let mut conn = self.driver.acquire().await.unwrap();
        conn.execute_script(&self.schema.render(sql)).await.unwrap();
    }

    /// Stops the server and drops the schema.
    pub(crate) async fn finish(self) {
        self.server.abort();
        self.sql("DROP SCHEMA {schema} CASCADE").await;
    }
}
