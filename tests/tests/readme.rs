//! README.md is the front door: short, and every command and link in it true.
//!
//! Its Kubernetes block runs for real only on a cluster (tests/e2e/readme-k8s.sh, from
//! tests/e2e/kind.sh with README_BLOCK=1); here, without one, the block must extract, parse with
//! `bash -n`, and name only files that exist.

use std::process::Command;

use benchmatrix_tests::repo_root;

fn readme() -> String {
    std::fs::read_to_string(repo_root().join("README.md")).expect("README.md")
}

/// The README's Kubernetes block, as tests/e2e/readme-k8s.sh extracts it.
fn k8s_block() -> String {
    let out = Command::new("bash")
        .arg(repo_root().join("tests/e2e/readme-k8s.sh"))
        .arg("--print")
        .output()
        .expect("bash runs tests/e2e/readme-k8s.sh");
    assert!(
        out.status.success(),
        "readme-k8s.sh --print failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn the_readme_is_a_front_door_of_at_most_300_lines() {
    let lines = readme().lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; move detail into docs/book"
    );
}

#[test]
fn the_k8s_block_extracts_and_parses() {
    let block = k8s_block();
    assert!(
        block.lines().count() > 5,
        "the block is too short:\n{block}"
    );
    let out = Command::new("bash")
        .args(["-n", "-c", &block])
        .output()
        .expect("bash -n");
    assert!(
        out.status.success(),
        "the README's Kubernetes block does not parse: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same CRD command as everywhere else, and the plugin run to a verdict.
    assert!(
        block.contains("kubectl apply --server-side --force-conflicts -f charts/benchmatrix/crds/")
    );
    assert!(block.contains("kubectl benchmatrix run "));
}

#[test]
fn every_file_the_k8s_block_names_exists() {
    let root = repo_root();
    let block = k8s_block();
    let mut named = 0;
    for token in block.split_whitespace() {
        let token = token.trim_matches(|c| c == '"' || c == '\'' || c == '\\');
        let first = token.split('/').next().unwrap_or_default();
        if matches!(
            first,
            "charts" | "manifests" | "tests" | "scripts" | "examples" | "bench" | "operator"
        ) {
            named += 1;
            assert!(
                root.join(token).exists(),
                "the README's Kubernetes block names {token}, which does not exist"
            );
        }
    }
    assert!(named >= 4, "the block names {named} repository paths");
    // `docker build ... .` builds the repository's Dockerfile, with a stage per image.
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).expect("Dockerfile");
    for stage in ["operator", "target", "loadgen"] {
        assert!(block.contains(stage) && dockerfile.contains(&format!(" AS {stage}\n")));
    }
}

#[test]
fn the_makefile_runs_the_commands_the_readme_shows() {
    let makefile = std::fs::read_to_string(repo_root().join("Makefile")).expect("Makefile");
    let readme = readme();
    for recipe in ["run", "test"] {
        let command = makefile
            .split(&format!("\n{recipe}:\n\t"))
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .unwrap_or_else(|| panic!("no `{recipe}` recipe in the Makefile"));
        assert!(
            readme.contains(command),
            "make {recipe} runs `{command}`, which README.md does not show"
        );
    }
}

#[test]
fn every_relative_link_in_the_readme_resolves() {
    let root = repo_root();
    let readme = readme();
    for link in readme.split("](").skip(1) {
        let target = link.split(')').next().unwrap_or_default();
        if target.starts_with("https://") || target.starts_with('#') {
            continue;
        }
        assert!(
            !target.starts_with("http:"),
            "README links {target}: use https"
        );
        let path = target.split('#').next().unwrap_or_default();
        assert!(
            root.join(path).exists(),
            "README.md links {target}, which does not exist"
        );
    }
}

#[test]
fn one_crd_upgrade_command_everywhere() {
    // Helm never upgrades crds/, so every place that says how to upgrade the CRD must say the
    // same command: the one scripts/install-operator.sh runs.
    const COMMAND: &str =
        "kubectl apply --server-side --force-conflicts -f charts/benchmatrix/crds/";
    let root = repo_root();
    let install = std::fs::read_to_string(root.join("scripts/install-operator.sh")).unwrap();
    assert!(
        install.contains("kubectl apply --server-side --force-conflicts -f \"${CHART}/crds/\"")
    );
    let mut files = vec![
        root.join("README.md"),
        root.join("charts/benchmatrix/templates/NOTES.txt"),
        root.join("charts/benchmatrix/Chart.yaml"),
        root.join("charts/benchmatrix/README.md"),
    ];
    let mut stack = vec![root.join("docs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path
                    .file_name()
                    .is_some_and(|n| n != "book" || dir.ends_with("docs"))
                {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            if line.contains("kubectl apply") && line.contains("crd") && !line.contains(COMMAND) {
                panic!(
                    "{}: a CRD command other than `{COMMAND}`:\n{line}",
                    file.display()
                );
            }
        }
    }
}

#[test]
fn every_repository_path_the_readme_names_exists() {
    // Samples, scripts and saved statuses the README tells a reader to run or open.
    let root = repo_root();
    let pattern = regex::Regex::new(
        r"\b(?:manifests|bench|tests|scripts|charts|examples|docs)/[A-Za-z0-9_./-]*[A-Za-z0-9_]",
    )
    .expect("a valid pattern");
    let readme = readme();
    let mut named = 0;
    for m in pattern.find_iter(&readme) {
        named += 1;
        assert!(
            root.join(m.as_str()).exists(),
            "README.md names {}, which does not exist",
            m.as_str()
        );
    }
    assert!(named >= 10, "the README names {named} repository paths");
}

/// The README's exit-code table and the book's page are the one table of
/// `engine/verdict/exit.rs`, as `make docs` writes them.
#[test]
fn the_exit_code_tables_are_the_ones_the_code_gives() {
    use benchmatrix::engine::verdict::exit;
    let readme = readme();
    let block = readme
        .split_once("<!-- exit-codes:begin -->\n")
        .and_then(|(_, rest)| rest.split_once("<!-- exit-codes:end -->"))
        .map(|(block, _)| block)
        .expect("README.md has the exit-codes markers");
    assert_eq!(
        block,
        exit::markdown_table(),
        "README.md's exit codes have drifted from exit::TABLE; regenerate with: make docs"
    );
    let page = std::fs::read_to_string(repo_root().join("docs/book/src/reference/exit-codes.md"))
        .unwrap_or_default();
    assert_eq!(
        page,
        exit::book_page(),
        "docs/book/src/reference/exit-codes.md has drifted; regenerate with: make docs"
    );
}
