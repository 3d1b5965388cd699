//! `scripts/house.py`, the house rules CI enforces: the workspace itself passes, and a planted
//! checkout with each kind of break (a circle, a back-arrow, an arrow between the executors, a
//! function over 80 lines) fails naming it.

use std::path::Path;
use std::process::{Command, Output};

use benchmatrix_tests::repo_root;

fn house(root: Option<&Path>) -> Output {
    let mut cmd = Command::new("python3");
    cmd.arg(repo_root().join("scripts/house.py"));
    if let Some(root) = root {
        cmd.env("HOUSE_ROOT", root);
    }
    cmd.output().expect("python3 runs")
}

/// A checkout whose operator crate holds `files` (path under operator/src, text).
fn planted(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join("operator/src").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn the_workspace_keeps_the_house_rules() {
    let o = house(None);
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("total: circles 0, back-arrows 0, arrows between executors 0"),
        "{text}"
    );
}

#[test]
fn each_kind_of_break_fails_and_is_named() {
    let long_body: String = (0..90).map(|i| format!("    let _x{i} = {i};\n")).collect();
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        (
            "circle: engine::a <-> engine::b",
            vec![
                (
                    "engine/a.rs",
                    "use crate::engine::b::B;\npub struct A;\n".into(),
                ),
                (
                    "engine/b.rs",
                    "use crate::engine::a::A;\npub struct B;\n".into(),
                ),
            ],
        ),
        (
            "back-arrow: engine::a -> frontends::f",
            vec![
                (
                    "engine/a.rs",
                    "use crate::frontends::f::F;\npub struct A;\n".into(),
                ),
                ("frontends/f.rs", "pub struct F;\n".into()),
            ],
        ),
        (
            "between executors: executors::local::l -> executors::cluster::c",
            vec![
                (
                    "executors/local/l.rs",
                    "use crate::executors::cluster::c::C;\n".into(),
                ),
                ("executors/cluster/c.rs", "pub struct C;\n".into()),
            ],
        ),
        (
            "long: operator/src/engine/a.rs:1 long (92 lines)",
            vec![("engine/a.rs", format!("fn long() {{\n{long_body}}}\n"))],
        ),
    ];
    for (named, files) in cases {
        let dir = planted(&files);
        let o = house(Some(dir.path()));
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(o.status.code(), Some(1), "{named}\n{text}");
        assert!(text.contains(named), "want {named:?} in\n{text}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("break(s) of the house rules"));
    }
}
