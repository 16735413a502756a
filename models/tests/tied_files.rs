//! The models stand for particular SQL files and Rust functions of the engine. This test fails
//! when one of those files changed since its model was last checked against it: re-read the model
//! (its module docs name the statements and functions each action stands for), change the model
//! if the protocol changed, and record the file's new hash in `models/tied_files.txt`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the models crate is in the workspace root")
        .to_owned()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `(recorded hash, path from the workspace root, model modules)` per line of the list.
fn tied_files() -> Vec<(String, String, Vec<String>)> {
    let list =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tied_files.txt"))
            .expect("models/tied_files.txt is readable");
    list.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.split_whitespace();
            let hash = parts.next().expect("a hash").to_owned();
            let path = parts.next().expect("a path").to_owned();
            let modules = parts
                .next()
                .expect("the model modules")
                .split(',')
                .map(str::to_owned)
                .collect();
            (hash, path, modules)
        })
        .collect()
}

#[test]
fn tied_files_are_unchanged_since_their_models_were_checked() {
    let root = repo_root();
    let mut stale = Vec::new();
    for (recorded, path, modules) in tied_files() {
        let models: Vec<String> = modules
            .iter()
            .map(|m| format!("models/src/{m}.rs"))
            .collect();
        match std::fs::read(root.join(&path)) {
            Ok(bytes) => {
                let now = sha256_hex(&bytes);
                if now != recorded {
                    stale.push(format!(
                        "{path} changed since the models that stand for it were checked against it.\n  \
                         Re-read {} against it (each module's table says which action stands for \
                         which statement and function), change the model if the protocol changed, \
                         then record the new hash in models/tied_files.txt:\n  {now}  {path}  {}",
                        models.join(", "),
                        modules.join(",")
                    ));
                }
            }
            Err(e) => stale.push(format!(
                "{path} (tied to {}) cannot be read ({e}): if it moved or was split, point the \
                 models' tables and models/tied_files.txt at where its code is now",
                models.join(", ")
            )),
        }
    }
    assert!(stale.is_empty(), "\n{}\n", stale.join("\n\n"));
}

#[test]
fn every_model_names_the_files_tied_to_it() {
    let root = repo_root();
    let mut missing = Vec::new();
    for (_, path, modules) in tied_files() {
        let name = Path::new(&path)
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a file name")
            .to_owned();
        for m in modules {
            let source = std::fs::read_to_string(root.join(format!("models/src/{m}.rs")))
                .unwrap_or_else(|e| panic!("models/src/{m}.rs, listed for {path}: {e}"));
            let stem = name.trim_end_matches(".sql").trim_end_matches(".rs");
            let named = source.contains(&name)
                || (name.ends_with(".rs") && source.contains(&snake_to_camel(stem)));
            if !named {
                missing.push(format!("models/src/{m}.rs does not name {path}"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// `job_rescuer` → `JobRescuer`: how a model's table names the type a Rust file holds.
fn snake_to_camel(s: &str) -> String {
    s.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}
