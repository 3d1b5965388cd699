//! The upstream corpus of Pod Security admission, read: `k8s.io/pod-security-admission`'s
//! `test/testdata/{baseline,restricted}/vX.Y/{pass,fail}/*.yaml`, pods that each level must admit
//! or refuse, one check exercised per file. Nobody here wrote them, and none is copied into this
//! repository: the tests that judge them (`tests/corpus.rs` here, the operator's
//! `children/pod_security/corpus.rs` for the pods it would create) read a copy from
//! `PSA_TESTDATA` and are ignored otherwise.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{Level, check_ids};

/// One fixture of the corpus that holds a pod.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// `fail` (the level must refuse it) or `pass` (it must admit it).
    pub outcome: &'static str,
    /// The file's name.
    pub file: String,
    /// The pod's metadata.
    pub meta: ObjectMeta,
    /// The pod's spec.
    pub spec: PodSpec,
    /// The kind that carries it: Pod, CronJob, or another pod-bearing kind.
    pub kind: &'static str,
    /// For a `fail` fixture, the check it exercises at the level read (at restricted, the
    /// restricted check that replaces a baseline one).
    pub want: Option<&'static str>,
}

/// The fixtures of `level` in the newest version folder under `root` (the testdata folder),
/// that folder, and how many fixtures held no pod.
pub fn fixtures(root: &Path, level: Level) -> (PathBuf, Vec<Fixture>, usize) {
    let dir = newest_version(&root.join(level.name()));
    let (mut out, mut not_pods) = (Vec::new(), 0);
    for outcome in ["fail", "pass"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(outcome))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(outcome).display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for path in files {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let doc: serde_json::Value = serde_yaml::from_str(&text).unwrap();
            let Some((meta, spec, kind)) = pod_of(&doc) else {
                not_pods += 1;
                continue;
            };
            let want =
                (outcome == "fail")
                    .then(|| check_of(&file))
                    .flatten()
                    .map(|id| match level {
                        Level::Restricted => at_restricted(id),
                        _ => id,
                    });
            out.push(Fixture {
                outcome,
                file,
                meta,
                spec,
                kind,
                want,
            });
        }
    }
    (dir, out, not_pods)
}

/// The restricted check that stands for a baseline one at restricted.
pub fn at_restricted(id: &'static str) -> &'static str {
    match id {
        "capabilities_baseline" => "capabilities_restricted",
        "hostPathVolumes" => "restrictedVolumes",
        "procMount" => "procMount_restricted",
        "seccompProfile_baseline" => "seccompProfile_restricted",
        other => other,
    }
}

/// The check a fixture exercises, from its file name: `allowprivilegeescalation0.yaml` is
/// `allowPrivilegeEscalation`, `hostprobesandhostlifecycle3.yaml` is
/// `hostProbesAndHostLifecycle`. None for the `base*` pass fixtures.
pub fn check_of(file: &str) -> Option<&'static str> {
    let stem = file
        .trim_end_matches(".yaml")
        .trim_end_matches(|c: char| c.is_ascii_digit());
    let mut ids = check_ids(Level::Restricted);
    ids.extend(check_ids(Level::Baseline));
    ids.into_iter().find(|id| id.eq_ignore_ascii_case(stem))
}

/// The newest `vX.Y` folder under `dir`, by version number (v1.35 after v1.9).
fn newest_version(dir: &Path) -> PathBuf {
    let mut versions: Vec<((u32, u32), PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let (major, minor) = name.strip_prefix('v')?.split_once('.')?;
            Some(((major.parse().ok()?, minor.parse().ok()?), e.path()))
        })
        .collect();
    versions.sort();
    versions.pop().expect("a vX.Y folder").1
}

/// The pod metadata and spec a fixture holds: a Pod's own, or the pod template of a kind that
/// has one (`spec.template`, `spec.jobTemplate.spec.template`). None for other kinds.
fn pod_of(doc: &serde_json::Value) -> Option<(ObjectMeta, PodSpec, &'static str)> {
    let kind = doc["kind"].as_str().unwrap_or_default();
    let (meta, spec, kind) = match kind {
        "Pod" => (&doc["metadata"], &doc["spec"], "Pod"),
        "CronJob" => {
            let t = &doc["spec"]["jobTemplate"]["spec"]["template"];
            (&t["metadata"], &t["spec"], "CronJob")
        }
        _ if doc["spec"]["template"].is_object() => {
            let t = &doc["spec"]["template"];
            (&t["metadata"], &t["spec"], "other pod-bearing kind")
        }
        _ => return None,
    };
    let meta: ObjectMeta = serde_json::from_value(meta.clone()).unwrap_or_default();
    let spec: PodSpec = serde_json::from_value(spec.clone()).expect("a pod spec");
    Some((meta, spec, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_names_map_to_check_ids() {
        assert_eq!(
            check_of("allowprivilegeescalation0.yaml"),
            Some("allowPrivilegeEscalation")
        );
        assert_eq!(
            check_of("hostprobesandhostlifecycle4.yaml"),
            Some("hostProbesAndHostLifecycle")
        );
        assert_eq!(
            check_of("procmount_restricted1.yaml"),
            Some("procMount_restricted")
        );
        assert_eq!(
            check_of("seccompprofile_baseline2.yaml"),
            Some("seccompProfile_baseline")
        );
        assert_eq!(check_of("base_windows.yaml"), None);
        assert_eq!(at_restricted("hostPathVolumes"), "restrictedVolumes");
    }
}
