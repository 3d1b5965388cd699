//! The chart's README (charts/benchmatrix/README.md) is generated from values.yaml's comments by
//! scripts/chart-docs.py, so its values table cannot drift from the values the chart reads.

use std::process::Command;

use benchmatrix_tests::repo_root;

#[test]
fn the_charts_readme_is_the_generated_one() {
    let root = repo_root();
    let out = Command::new("python3")
        .arg(root.join("scripts/chart-docs.py"))
        .output()
        .expect("python3 runs scripts/chart-docs.py (install python3: scripts/test-deps.sh)");
    assert!(
        out.status.success(),
        "scripts/chart-docs.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).expect("UTF-8");
    let file = "charts/benchmatrix/README.md";
    let on_disk = std::fs::read_to_string(root.join(file)).unwrap_or_default();
    assert!(
        on_disk == generated,
        "{file} has drifted from values.yaml's comments; regenerate with:\n  make chart-docs"
    );
}

#[test]
fn every_top_level_value_has_a_row() {
    let root = repo_root();
    let values = std::fs::read_to_string(root.join("charts/benchmatrix/values.yaml")).unwrap();
    let readme = std::fs::read_to_string(root.join("charts/benchmatrix/README.md")).unwrap();
    for line in values.lines() {
        let Some((key, _)) = line.split_once(':') else {
            continue;
        };
        if line.starts_with(|c: char| c.is_ascii_alphabetic()) {
            assert!(
                readme.contains(&format!("| `{key}` |")),
                "values.yaml's {key} has no row in the chart's README"
            );
        }
    }
}
