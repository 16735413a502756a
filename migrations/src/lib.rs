//! The versioned SQL migrations of the pgmill job queue schema: the one copy of the schema.
//!
//! Each migration is a pair of files `NNN_name.up.sql` / `NNN_name.down.sql` under `sql/`, numbered
//! contiguously from 1. Tables are named through the schema marker `{schema}`, which the migrator
//! in `pgmill` replaces with the quoted schema name. Apply them with `pgmill::Migrator` (or the
//! `pgmill migrate` CLI); users of other migration tools get the rendered SQL of each version
//! from `Migrator::sql`.

/// One schema version: its up and down scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// The version number, from 1.
    pub version: u32,
    /// The file name without its `.up.sql` / `.down.sql` suffix, e.g. `001_create_tables`.
    pub name: &'static str,
    /// The script applying this version.
    pub up: &'static str,
    /// The script reverting it.
    pub down: &'static str,
}

/// The migration line these versions belong to, recorded with each applied version.
pub const LINE: &str = "main";

macro_rules! migrations {
    ($($version:literal => $file:literal,)*) => {
        /// Every migration, in version order.
        pub const MIGRATIONS: &[Migration] = &[
            $(Migration {
                version: $version,
                name: $file,
                up: include_str!(concat!("../sql/", $file, ".up.sql")),
                down: include_str!(concat!("../sql/", $file, ".down.sql")),
            },)*
        ];
    };
}

migrations! {
    1 => "001_create_tables",
    2 => "002_claim_token",
    3 => "003_job_queue_name_check",
    4 => "004_validate_job_queue_name_check",
    5 => "005_queue_name_check_without_repetition",
    6 => "006_validate_queue_name_check",
    7 => "007_job_row_rules_in_one_check",
    8 => "008_validate_job_row_rules",
    9 => "009_finished_jobs_leave_the_job_table",
    10 => "010_periodic_time_zone",
    11 => "011_retention_rules",
    12 => "012_queue_stat",
}

/// The latest version.
pub fn latest_version() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_contiguous_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "{}", m.name);
        }
    }

    #[test]
    fn every_file_is_listed_and_comes_in_pairs() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut expected: Vec<String> = MIGRATIONS
            .iter()
            .flat_map(|m| {
                assert!(
                    m.name.starts_with(&format!("{:03}_", m.version)),
                    "{}",
                    m.name
                );
                ["down", "up"].map(|d| format!("{}.{d}.sql", m.name))
            })
            .collect();
        expected.sort();
        assert_eq!(names, expected);
    }

    #[test]
    fn scripts_name_tables_through_the_schema_marker() {
        for m in MIGRATIONS {
            for script in [m.up, m.down] {
                for line in script.lines().filter(|l| !l.trim_start().starts_with("--")) {
                    for word in ["TABLE", "ON", "TYPE", "FUNCTION", "INTO", "FROM", "UPDATE"] {
                        assert!(
                            !line.contains(&format!("{word} pgmill_")),
                            "{}: unqualified name in {line:?}",
                            m.name
                        );
                    }
                }
            }
        }
    }
}
