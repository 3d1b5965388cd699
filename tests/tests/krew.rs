//! The krew manifest, as `scripts/krew-manifest.sh` renders it from a release archive, has what
//! krew requires of a plugin manifest (krew's own validation: the apiVersion and kind, a name
//! matching the file's, a short description, a `v`-prefixed semantic version, and per platform
//! a selector, an https URI, the archive's sha256 and a `bin` the archive holds), so a release
//! can be installed with `kubectl krew install --manifest --archive` and submitted to
//! krew-index. The script refuses what would make a broken manifest.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_yaml::Value;

use benchmatrix_tests::repo_root;

/// A release archive holding `files` (name, content) at its top.
fn archive(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let content = dir.join(format!("{name}.content"));
    std::fs::create_dir_all(&content).unwrap();
    for (file, text) in files {
        std::fs::write(content.join(file), text).unwrap();
    }
    let path = dir.join(name);
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&path)
        .arg("-C")
        .arg(&content)
        .args(files.iter().map(|f| f.0))
        .status()
        .expect("tar runs");
    assert!(status.success());
    path
}

fn render(args: &[&str]) -> Output {
    Command::new(repo_root().join("scripts/krew-manifest.sh"))
        .args(args)
        .output()
        .expect("the script runs")
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

fn text<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut at = v;
    for key in path {
        at = &at[*key];
    }
    at.as_str()
        .unwrap_or_else(|| panic!("{} is not a string: {at:?}", path.join(".")))
}

#[test]
fn the_rendered_manifest_has_every_field_krew_requires() {
    let dir = tempfile::tempdir().unwrap();
    let tgz = archive(
        dir.path(),
        "benchmatrix-v0.1.0-linux-amd64.tar.gz",
        &[("benchmatrix", "#!/bin/sh\n")],
    );
    let out = render(&["v0.1.0", tgz.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: Value = serde_yaml::from_slice(&out.stdout).expect("the manifest is YAML");

    assert_eq!(
        text(&manifest, &["apiVersion"]),
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(text(&manifest, &["kind"]), "Plugin");
    // krew-index wants the manifest's file named after the plugin: the template the script
    // renders from (its `template=`) is <metadata.name>.yaml.
    let name = text(&manifest, &["metadata", "name"]);
    assert_eq!(name, "benchmatrix");
    let script = std::fs::read_to_string(repo_root().join("scripts/krew-manifest.sh")).unwrap();
    let template = script
        .lines()
        .find_map(|l| l.strip_prefix("readonly template=\""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("scripts/krew-manifest.sh sets readonly template=\"...\"");
    let template = Path::new(template);
    assert_eq!(
        template.file_stem().and_then(|s| s.to_str()),
        Some(name),
        "the manifest's file {} is not named after its metadata.name",
        template.display()
    );
    assert_eq!(template.extension().and_then(|s| s.to_str()), Some("yaml"));
    assert_eq!(text(&manifest, &["spec", "version"]), "v0.1.0");
    let short = text(&manifest, &["spec", "shortDescription"]);
    assert!(!short.is_empty() && short.len() <= 60, "{short:?}");
    assert!(!text(&manifest, &["spec", "description"]).trim().is_empty());
    assert!(text(&manifest, &["spec", "homepage"]).starts_with("https://"));

    let platforms = manifest["spec"]["platforms"]
        .as_sequence()
        .expect("spec.platforms");
    assert!(!platforms.is_empty());
    let listed = Command::new("tar").arg("-tzf").arg(&tgz).output().unwrap();
    let in_archive: Vec<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim_start_matches("./").to_string())
        .collect();
    for p in platforms {
        let labels = &p["selector"]["matchLabels"];
        assert_eq!(text(labels, &["os"]), "linux");
        assert_eq!(text(labels, &["arch"]), "amd64");
        assert_eq!(
            text(p, &["uri"]),
            "https://github.com/benchmatrix/benchmatrix/releases/download/v0.1.0/\
             benchmatrix-v0.1.0-linux-amd64.tar.gz"
        );
        assert_eq!(text(p, &["sha256"]), sha256(&tgz));
        // The executable krew links as kubectl-benchmatrix: copied from the archive by
        // `files`, then named by `bin`.
        let bin = text(p, &["bin"]);
        let files = p["files"].as_sequence().expect("files");
        assert!(
            files.iter().any(|f| text(f, &["from"]) == bin
                && text(f, &["to"]) == "."
                && in_archive.iter().any(|a| a == bin)),
            "bin {bin} is not copied from the archive ({in_archive:?})"
        );
    }
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains('@'),
        "a placeholder is left"
    );

    // Another download location.
    let out = render(&[
        "v1.2.3-rc.1",
        tgz.to_str().unwrap(),
        "https://downloads.example/bm.tgz",
    ]);
    assert!(out.status.success());
    let manifest: Value = serde_yaml::from_slice(&out.stdout).unwrap();
    assert_eq!(text(&manifest, &["spec", "version"]), "v1.2.3-rc.1");
    assert_eq!(
        text(&manifest["spec"]["platforms"][0], &["uri"]),
        "https://downloads.example/bm.tgz"
    );
}

#[test]
fn the_script_refuses_what_would_make_a_broken_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let good = archive(dir.path(), "good.tar.gz", &[("benchmatrix", "x")]);
    let wrong = archive(dir.path(), "wrong.tar.gz", &[("kubectl-other", "x")]);
    let not_gzip = dir.path().join("plain.tar.gz");
    std::fs::write(&not_gzip, "not an archive").unwrap();
    let good = good.to_str().unwrap();
    for (args, says) in [
        (vec!["0.1.0", good], "not v followed by a semantic version"),
        (vec!["v0.1", good], "not v followed by a semantic version"),
        (vec!["v0.1.0", "/no/such.tar.gz"], "no such file"),
        (vec!["v0.1.0", not_gzip.to_str().unwrap()], "not a .tar.gz"),
        (
            vec!["v0.1.0", wrong.to_str().unwrap()],
            "no benchmatrix binary",
        ),
        (
            vec!["v0.1.0", good, "http://insecure.example/a.tgz"],
            "https",
        ),
        (vec!["v0.1.0"], "usage"),
    ] {
        let out = render(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?} printed a manifest");
    }
}
