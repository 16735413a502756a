//! Failures print one line on stderr, never a password, and exit non-zero.

use std::process::Command;

#[test]
fn a_failed_connection_is_one_line_without_the_password() {
    let out = Command::new(env!("CARGO_BIN_EXE_pgmill"))
        .args([
            "--database-url",
            "postgres://app:topsecret99@127.0.0.1:1/jobs",
            "queue",
            "list",
        ])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("pgmill: cannot connect to "), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("topsecret99"), "{stderr}");
    assert!(
        stderr.contains("postgres://app:***@127.0.0.1:1/jobs"),
        "{stderr}"
    );
}

#[test]
fn no_database_at_all_names_the_ways_to_give_one() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pgmill"));
    cmd.args(["migrate", "status"]);
    for var in [
        "DATABASE_URL",
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGPASSWORD",
        "PGDATABASE",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("pgmill: no database given"), "{stderr}");
    assert!(
        stderr.contains("--database-url") && stderr.contains("PGHOST"),
        "{stderr}"
    );
}
