//! Helpers shared by the workspace-level tests.

pub mod schema_check;

/// The repository's root: the parent of this crate's folder, from which every test reads the
/// files it checks.
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}
