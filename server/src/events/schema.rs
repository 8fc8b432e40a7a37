//! `ptslog events schema`: the payload JSON Schemas, written from the code into a directory or
//! checked against it.

use std::path::Path;

use anyhow::Context;
use domain::events::schema::payload_schemas;

/// Writes every schema file into `dir`; answers how many.
pub fn write(dir: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let schemas = payload_schemas();
    for s in &schemas {
        let path = dir.join(s.file_name());
        std::fs::write(&path, s.file_text())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(schemas.len())
}

/// The files of `dir` that differ from the code (missing, stale or of no kind), each with why.
pub fn check(dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let schemas = payload_schemas();
    for s in &schemas {
        let path = dir.join(s.file_name());
        match std::fs::read_to_string(&path) {
            Ok(text) if text == s.file_text() => {}
            Ok(_) => problems.push(format!("{}: stale", path.display())),
            Err(e) => problems.push(format!("{}: {e}", path.display())),
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") && !schemas.iter().any(|s| s.file_name() == name) {
                problems.push(format!("{}: no such kind or version", e.path().display()));
            }
        }
    }
    problems
}
