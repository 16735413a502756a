//! The dashboard in a real browser: headless Chromium driven over chromedriver (WebDriver),
//! against the throwaway test database. Each test starts its own chromedriver and browser
//! profile, works in a fresh schema, and saves a screenshot of each page it shows under
//! `target/tmp/pgmill-web-screenshots/`.

mod actions;
mod charts;
mod harness;
mod pages;
mod safety;
