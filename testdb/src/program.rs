//! The programs some tests need besides PostgreSQL (PgBouncer, Chromium, chromedriver): found
//! at once, or named with the command that installs them.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// Directories searched after `PATH`: Debian installs `pgbouncer` in `/usr/sbin`, which is not
/// on an unprivileged user's `PATH`.
const SBIN_DIRS: [&str; 3] = ["/usr/local/sbin", "/usr/sbin", "/sbin"];

/// The path of the program `name`, or a panic with one line naming it and its install command,
/// e.g. `pgbouncer not found: install it (Debian/Ubuntu: apt-get install pgbouncer)`.
///
/// Call it first in a test that needs the program, before starting anything else, so a machine
/// without it fails the test at once and says what to install.
///
/// The program is looked for on `PATH`, then in `/usr/local/sbin`, `/usr/sbin` and `/sbin`. The
/// environment variable `PGMILL_TEST_<NAME>` (the name in upper case, `-` as `_`: e.g.
/// `PGMILL_TEST_PGBOUNCER`, `PGMILL_TEST_CHROMEDRIVER`) overrides the search with a path; set it
/// to a path that does not exist (`PGMILL_TEST_PGBOUNCER=/nonexistent`) to see what a machine
/// without the program reports.
///
/// # Panics
///
/// When the program is not found, with [`Error::ProgramNotFound`]'s one-line message.
///
/// # Examples
///
/// ```no_run
/// let pgbouncer = pgmill_testdb::require_program("pgbouncer");
/// # let _ = pgbouncer;
/// ```
#[track_caller]
pub fn require_program(name: &str) -> PathBuf {
    match find_program(name) {
        Ok(path) => path,
        Err(e) => panic!("{e}"),
    }
}

/// The path of the program `name`, found as [`require_program`] finds it.
///
/// # Errors
///
/// [`Error::ProgramNotFound`] when it is not found.
pub fn find_program(name: &str) -> Result<PathBuf, Error> {
    let not_found = |looked_in: String| Error::ProgramNotFound {
        program: name.to_owned(),
        looked_in,
        install: install_command(name),
    };
    let var = override_var(name);
    if let Some(path) = std::env::var_os(&var).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(not_found(format!(" at {} ({var})", path.display())))
        };
    }
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
        .ok_or_else(|| not_found(String::new()))
}

/// The environment variable that overrides where `name` is looked for.
fn override_var(name: &str) -> String {
    format!(
        "PGMILL_TEST_{}",
        name.to_ascii_uppercase().replace(['-', '.'], "_")
    )
}

/// The command installing `name` on Debian and Ubuntu, when known.
fn install_command(name: &str) -> Option<&'static str> {
    match name {
        "pgbouncer" => Some("apt-get install pgbouncer"),
        // chromedriver drives the browser: the tests need both.
        "chromium" | "chromedriver" => Some("apt-get install chromium chromium-driver"),
        _ => None,
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_named_in_one_line_with_its_install_command() {
        let e = find_program("pgmill-no-such-program").unwrap_err();
        assert_eq!(
            e.to_string(),
            "pgmill-no-such-program not found: install it"
        );
        let e = Error::ProgramNotFound {
            program: "pgbouncer".into(),
            looked_in: String::new(),
            install: install_command("pgbouncer"),
        };
        assert_eq!(
            e.to_string(),
            "pgbouncer not found: install it (Debian/Ubuntu: apt-get install pgbouncer)"
        );
        let e = Error::ProgramNotFound {
            program: "chromedriver".into(),
            looked_in: " at /nonexistent (PGMILL_TEST_CHROMEDRIVER)".into(),
            install: install_command("chromedriver"),
        };
        assert_eq!(
            e.to_string(),
            "chromedriver not found at /nonexistent (PGMILL_TEST_CHROMEDRIVER): install it \
             (Debian/Ubuntu: apt-get install chromium chromium-driver)"
        );
    }

    #[test]
    fn programs_are_found_on_the_path() {
        assert!(find_program("sh").is_ok_and(|p| p.ends_with("sh")));
        assert_eq!(
            override_var("chromium-driver"),
            "PGMILL_TEST_CHROMIUM_DRIVER"
        );
    }
}
