//! The release workflow (`.github/workflows/release.yml`) and the script that builds the release's
//! files (`scripts/release.sh`, which CI runs as a dry run) agree: the assets the workflow uploads,
//! pushes and attaches to the GitHub release are the files the script names, the krew manifest's
//! download URLs end in those names, the images go to the repositories the chart pulls from, and
//! the images of `Dockerfile.release` (from prebuilt binaries) are configured as `Dockerfile`'s.
//! Cheap: nothing is built, the files are only read (and the krew manifest rendered from two
//! stand-in archives).

use std::collections::BTreeSet;
use std::process::Command;

use serde_yaml::Value;

const VERSION: &str = "v0.1.0";
const CHART_VERSION: &str = "0.1.0";
const ARCHS: [&str; 2] = ["amd64", "arm64"];

use benchmatrix_tests::repo_root;

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The value of `readonly NAME='...'` (or `readonly NAME=(...)`) in scripts/release.sh.
fn script_const(script: &str, name: &str) -> String {
    let prefix = format!("readonly {name}=");
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("scripts/release.sh has no `readonly {name}=`"));
    line.trim_matches(|c| c == '\'' || c == '"' || c == '(' || c == ')')
        .to_string()
}

struct Names {
    archives: Vec<String>,
    chart: String,
    krew: String,
    sums: String,
    registry: String,
    components: Vec<String>,
}

/// The release's file names as scripts/release.sh makes them, for VERSION.
fn script_names() -> Names {
    let script = read("scripts/release.sh");
    let archive = script_const(&script, "ARCHIVE_PATTERN");
    let chart = script_const(&script, "CHART_PATTERN");
    assert!(archive.contains("@VERSION@") && archive.contains("@ARCH@"));
    Names {
        archives: ARCHS
            .iter()
            .map(|arch| {
                archive
                    .replace("@VERSION@", VERSION)
                    .replace("@ARCH@", arch)
            })
            .collect(),
        chart: chart.replace("@CHART_VERSION@", CHART_VERSION),
        krew: script_const(&script, "KREW_MANIFEST"),
        sums: script_const(&script, "SUMS"),
        registry: script_const(&script, "REGISTRY"),
        components: script_const(&script, "COMPONENTS")
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    }
}

fn workflow() -> Value {
    serde_yaml::from_str(&read(".github/workflows/release.yml")).expect("release.yml is YAML")
}

/// A workflow string with its expressions and shell variables replaced by their values for
/// VERSION (and the matrix's arch or component, when given).
fn fill(text: &str, arch: Option<&str>) -> String {
    let mut s = text
        .replace("${{ needs.version.outputs.version }}", VERSION)
        .replace("${{ needs.version.outputs.chart-version }}", CHART_VERSION)
        .replace("${VERSION}", VERSION)
        .replace("${CHART_VERSION}", CHART_VERSION);
    if let Some(arch) = arch {
        s = s.replace("${{ matrix.arch }}", arch);
    }
    s
}

fn job<'a>(wf: &'a Value, name: &str) -> &'a Value {
    let job = &wf["jobs"][name];
    assert!(job.is_mapping(), "release.yml has no job {name}");
    job
}

fn steps(job: &Value) -> &Vec<Value> {
    job["steps"].as_sequence().expect("steps")
}

/// The step that uses `action` (e.g. actions/upload-artifact) whose `with.name` is `name`, or
/// the only step using it when `name` is None.
fn uses<'a>(job: &'a Value, action: &str, name: Option<&str>) -> &'a Value {
    let found: Vec<&Value> = steps(job)
        .iter()
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.split('@').next() == Some(action))
                && name.is_none_or(|n| s["with"]["name"].as_str() == Some(n))
        })
        .collect();
    assert_eq!(found.len(), 1, "one step using {action} ({name:?})");
    found[0]
}

fn run_with(job: &Value, needle: &str) -> String {
    steps(job)
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains(needle))
        .unwrap_or_else(|| panic!("no run step containing {needle}"))
        .to_string()
}

#[test]
fn the_workflow_uploads_and_releases_the_files_the_script_makes() {
    let names = script_names();
    let wf = workflow();

    // One binaries job per platform, each archive uploaded under the script's name.
    let binaries = job(&wf, "binaries");
    let include = binaries["strategy"]["matrix"]["include"]
        .as_sequence()
        .expect("binaries: strategy.matrix.include");
    let archs: BTreeSet<&str> = include.iter().filter_map(|i| i["arch"].as_str()).collect();
    assert_eq!(archs, ARCHS.into_iter().collect());
    for i in include {
        let arch = i["arch"].as_str().unwrap();
        let triple = i["triple"].as_str().unwrap();
        let expected = match arch {
            "amd64" => "x86_64-unknown-linux-gnu",
            _ => "aarch64-unknown-linux-gnu",
        };
        assert_eq!(triple, expected, "{arch}");
    }
    let run = run_with(binaries, "scripts/release.sh binaries");
    assert!(run.contains("dist"), "{run}");
    let upload = uses(
        binaries,
        "actions/upload-artifact",
        Some("archive-linux-${{ matrix.arch }}"),
    );
    let path = upload["with"]["path"].as_str().unwrap();
    for (arch, archive) in ARCHS.iter().zip(&names.archives) {
        assert_eq!(fill(path, Some(arch)), format!("dist/{archive}"));
    }

    // The chart: packaged by the script, pushed and uploaded under its name.
    let chart = job(&wf, "chart");
    assert!(run_with(chart, "scripts/release.sh chart").contains("dist"));
    let push = fill(&run_with(chart, "push"), None);
    assert!(
        push.contains(&format!("\"dist/{}\"", names.chart)),
        "helm push does not push dist/{}: {push}",
        names.chart
    );
    assert!(push.contains("\"oci://${REGISTRY}/charts\""), "{push}");
    let upload = uses(chart, "actions/upload-artifact", Some("chart"));
    assert_eq!(
        fill(upload["with"]["path"].as_str().unwrap(), None),
        format!("dist/{}", names.chart)
    );

    // The release: the krew manifest and SHA256SUMS made for both platforms, and exactly the
    // script's assets attached.
    let release = job(&wf, "release");
    let finish = run_with(release, "scripts/release.sh finish");
    for arch in ARCHS {
        assert!(finish.contains(&format!("--arch {arch}")), "{finish}");
    }
    let create = fill(&run_with(release, "gh release create"), None);
    let attached: BTreeSet<String> = create
        .split_whitespace()
        .map(|w| w.trim_matches('"'))
        .filter_map(|w| w.strip_prefix("dist/"))
        .map(str::to_string)
        .collect();
    let mut expected: BTreeSet<String> = names.archives.iter().cloned().collect();
    expected.extend([names.chart.clone(), names.krew.clone(), names.sums.clone()]);
    assert_eq!(attached, expected, "gh release create attaches other files");
}

#[test]
fn the_images_go_where_the_chart_pulls_them_from() {
    let names = script_names();
    let wf = workflow();
    assert_eq!(
        wf["env"]["REGISTRY"].as_str(),
        Some(names.registry.as_str())
    );
    let images = job(&wf, "images");
    let components: Vec<&str> = images["strategy"]["matrix"]["component"]
        .as_sequence()
        .expect("images: strategy.matrix.component")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(components, names.components);
    let meta = uses(images, "docker/metadata-action", None);
    assert_eq!(
        meta["with"]["images"].as_str(),
        Some("${{ env.REGISTRY }}/benchmatrix-${{ matrix.component }}")
    );
    let values: Value =
        serde_yaml::from_str(&read("charts/benchmatrix/values.yaml")).expect("values.yaml");
    for c in &names.components {
        assert_eq!(
            values["image"][c.as_str()]["repository"].as_str(),
            Some(format!("{}/benchmatrix-{c}", names.registry).as_str()),
            "values.yaml image.{c}.repository"
        );
    }

    let build = uses(images, "docker/build-push-action", None);
    let with = &build["with"];
    assert_eq!(with["file"].as_str(), Some("Dockerfile.release"));
    assert_eq!(with["target"].as_str(), Some("${{ matrix.component }}"));
    assert_eq!(with["platforms"].as_str(), Some("linux/amd64,linux/arm64"));
    assert_eq!(with["push"].as_bool(), Some(true));
    assert_eq!(with["sbom"].as_bool(), Some(true));
    assert_eq!(with["provenance"].as_str(), Some("mode=max"));
}

#[test]
fn every_job_asks_for_its_own_permissions() {
    let wf = workflow();
    assert!(
        wf["permissions"].as_mapping().is_some_and(|m| m.is_empty()),
        "release.yml: top-level permissions must be {{}}"
    );
    let writes = |job: &str| -> BTreeSet<String> {
        job_permissions(&wf, job)
            .into_iter()
            .filter(|(_, v)| v == "write")
            .map(|(k, _)| k)
            .collect()
    };
    assert_eq!(writes("version"), BTreeSet::new());
    assert_eq!(writes("binaries"), BTreeSet::new());
    assert_eq!(writes("images"), BTreeSet::from(["packages".to_string()]));
    assert_eq!(writes("chart"), BTreeSet::from(["packages".to_string()]));
    assert_eq!(writes("release"), BTreeSet::from(["contents".to_string()]));
}

fn job_permissions(wf: &Value, name: &str) -> Vec<(String, String)> {
    job(wf, name)["permissions"]
        .as_mapping()
        .unwrap_or_else(|| panic!("job {name} sets no permissions"))
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().unwrap().to_string(),
                v.as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_krew_manifest_downloads_the_archives_the_script_makes() {
    let names = script_names();
    let dir = tempfile::tempdir().unwrap();
    let content = dir.path().join("content");
    std::fs::create_dir(&content).unwrap();
    std::fs::write(content.join("benchmatrix"), "#!/bin/sh\n").unwrap();
    let mut args = vec![VERSION.to_string()];
    for archive in &names.archives {
        let path = dir.path().join(archive);
        let status = Command::new("tar")
            .arg("-czf")
            .arg(&path)
            .arg("-C")
            .arg(&content)
            .arg("benchmatrix")
            .status()
            .unwrap();
        assert!(status.success());
        args.push(path.to_str().unwrap().to_string());
    }
    let out = Command::new(repo_root().join("scripts/krew-manifest.sh"))
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: Value = serde_yaml::from_slice(&out.stdout).unwrap();
    let platforms = manifest["spec"]["platforms"].as_sequence().unwrap();
    assert_eq!(platforms.len(), ARCHS.len());
    for ((p, arch), archive) in platforms.iter().zip(ARCHS).zip(&names.archives) {
        assert_eq!(p["selector"]["matchLabels"]["arch"].as_str(), Some(arch));
        assert_eq!(
            p["uri"].as_str().unwrap(),
            format!(
                "https://github.com/benchmatrix/benchmatrix/releases/download/{VERSION}/{archive}"
            )
        );
    }
}

/// Per stage of a Dockerfile, the instructions that make the image's configuration (and the
/// destination and file name of each COPY), in order.
fn image_config(path: &str) -> Vec<(String, Vec<String>)> {
    let mut stages: Vec<(String, Vec<String>)> = Vec::new();
    let mut joined = String::new();
    for line in read(path).lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(part) = line.strip_suffix('\\') {
            joined.push_str(part);
            continue;
        }
        joined.push_str(line);
        let instruction = std::mem::take(&mut joined);
        let words: Vec<&str> = instruction.split_whitespace().collect();
        let Some(keyword) = words.first() else {
            continue;
        };
        match *keyword {
            "FROM" => stages.push((words.last().unwrap().to_string(), Vec::new())),
            "USER" | "ENTRYPOINT" | "CMD" | "ENV" | "EXPOSE" | "LABEL" => {
                stages.last_mut().unwrap().1.push(words.join(" "));
            }
            "COPY" => {
                let dest = words.last().unwrap();
                let src = words[words.len() - 2].rsplit('/').next().unwrap();
                stages
                    .last_mut()
                    .unwrap()
                    .1
                    .push(format!("COPY {src} -> {dest}"));
            }
            _ => {}
        }
    }
    stages.retain(|(name, _)| name != "builder");
    stages
}

#[test]
fn the_release_images_are_configured_as_the_dockerfile_s() {
    let built = image_config("Dockerfile");
    let released = image_config("Dockerfile.release");
    let names = script_names();
    for c in &names.components {
        assert!(
            released.iter().any(|(n, _)| n == c),
            "Dockerfile.release has no stage {c}"
        );
    }
    assert_eq!(
        released, built,
        "Dockerfile.release's images differ from Dockerfile's"
    );
}
