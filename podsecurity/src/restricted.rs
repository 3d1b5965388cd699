//! The restricted checks: baseline, plus the hardening a pod must opt into (non-root, no
//! privilege escalation, every capability dropped, a seccomp profile, only volume types that
//! belong to the pod). Four baseline checks are replaced by stricter ones: `capabilities_baseline`
//! by `capabilities_restricted`, `hostPathVolumes` by `restrictedVolumes`, `procMount` by
//! `procMount_restricted` and `seccompProfile_baseline` by `seccompProfile_restricted`.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Volume;

use super::baseline::{self, confined_seccomp, unmasked_proc};
use super::pod::{Pod, containers_phrase, join_quote, pluralize, setters};
use super::{Check, Violation};

/// Baseline checks that a restricted check replaces.
const REPLACED: [&str; 4] = [
    "capabilities_baseline",
    "hostPathVolumes",
    "procMount",
    "seccompProfile_baseline",
];

/// The restricted level's own checks, by id.
const OWN: [Check; 7] = [
    ("allowPrivilegeEscalation", allow_privilege_escalation),
    ("capabilities_restricted", capabilities),
    ("procMount_restricted", proc_mount),
    ("restrictedVolumes", restricted_volumes),
    ("runAsNonRoot", run_as_non_root),
    ("runAsUser", run_as_user),
    ("seccompProfile_restricted", seccomp_profile),
];

/// Every restricted check, in Pod Security admission's order: the baseline checks it keeps
/// (by id), then its own (by id).
pub(super) const CHECKS: [Check; 15] = {
    let mut all = [OWN[0]; 15];
    let mut n = 0;
    let mut i = 0;
    while i < baseline::CHECKS.len() {
        if !replaced(baseline::CHECKS[i].0) {
            all[n] = baseline::CHECKS[i];
            n += 1;
        }
        i += 1;
    }
    let mut j = 0;
    while j < OWN.len() {
        all[n] = OWN[j];
        n += 1;
        j += 1;
    }
    assert!(n == 15, "restricted: baseline checks kept + own checks");
    all
};

const fn replaced(id: &str) -> bool {
    let mut i = 0;
    while i < REPLACED.len() {
        if const_eq(REPLACED[i], id) {
            return true;
        }
        i += 1;
    }
    false
}

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

fn violation(check: &'static str, reason: &str, detail: String, path: String) -> Violation {
    Violation {
        check,
        reason: reason.to_owned(),
        detail,
        path,
    }
}

fn allow_privilege_escalation(pod: &Pod) -> Option<Violation> {
    // A Windows pod cannot set the field at all (API validation refuses it).
    if pod.is_windows() {
        return None;
    }
    let bad: Vec<_> = pod
        .containers
        .iter()
        .filter(|c| c.security.and_then(|s| s.allow_privilege_escalation) != Some(false))
        .collect();
    let first = bad.first()?;
    let names: Vec<&str> = bad.iter().map(|c| c.name).collect();
    Some(violation(
        "allowPrivilegeEscalation",
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&names)
        ),
        format!("{}.securityContext.allowPrivilegeEscalation", first.path),
    ))
}

fn capabilities(pod: &Pod) -> Option<Violation> {
    if pod.is_windows() {
        return None;
    }
    let mut missing_drop_all = Vec::new();
    let mut adding = Vec::new();
    let mut forbidden = BTreeSet::new();
    let mut first = None;
    for c in &pod.containers {
        let caps = c.security.and_then(|s| s.capabilities.as_ref());
        let drops_all = caps
            .and_then(|k| k.drop.as_ref())
            .is_some_and(|d| d.iter().any(|x| x == "ALL"));
        if !drops_all {
            missing_drop_all.push(c.name);
            first.get_or_insert_with(|| format!("{}.securityContext.capabilities.drop", c.path));
        }
        let mut adds_forbidden = false;
        for cap in caps.and_then(|k| k.add.as_ref()).into_iter().flatten() {
            // Binding a port below 1024 is the one capability a restricted pod may add back.
            if cap != "NET_BIND_SERVICE" {
                adds_forbidden = true;
                forbidden.insert(cap.clone());
            }
        }
        if adds_forbidden {
            adding.push(c.name);
            first.get_or_insert_with(|| format!("{}.securityContext.capabilities.add", c.path));
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding.is_empty() {
        let caps: Vec<String> = forbidden.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding),
            join_quote(&caps)
        ));
    }
    Some(violation(
        "capabilities_restricted",
        "unrestricted capabilities",
        details.join("; "),
        first?,
    ))
}

fn proc_mount(pod: &Pod) -> Option<Violation> {
    // Unlike baseline, refused in a user namespace too.
    unmasked_proc(pod, "procMount_restricted")
}

/// The volume type a restricted pod may not use, or None for one it may: volumes that belong
/// to the pod (ConfigMaps, Secrets, the downward API, emptyDir, claims, CSI, images...), not
/// the node's or a shared network file system reached with the node's credentials.
fn restricted_type(v: &Volume) -> Option<&'static str> {
    let allowed = v.config_map.is_some()
        || v.csi.is_some()
        || v.downward_api.is_some()
        || v.empty_dir.is_some()
        || v.ephemeral.is_some()
        || v.image.is_some()
        || v.persistent_volume_claim.is_some()
        || v.projected.is_some()
        || v.secret.is_some();
    if allowed {
        return None;
    }
    let named = [
        ("hostPath", v.host_path.is_some()),
        ("gcePersistentDisk", v.gce_persistent_disk.is_some()),
        ("awsElasticBlockStore", v.aws_elastic_block_store.is_some()),
        ("gitRepo", v.git_repo.is_some()),
        ("nfs", v.nfs.is_some()),
        ("iscsi", v.iscsi.is_some()),
        ("glusterfs", v.glusterfs.is_some()),
        ("rbd", v.rbd.is_some()),
        ("flexVolume", v.flex_volume.is_some()),
        ("cinder", v.cinder.is_some()),
        ("cephfs", v.cephfs.is_some()),
        ("flocker", v.flocker.is_some()),
        ("fc", v.fc.is_some()),
        ("azureFile", v.azure_file.is_some()),
        ("vsphereVolume", v.vsphere_volume.is_some()),
        ("quobyte", v.quobyte.is_some()),
        ("azureDisk", v.azure_disk.is_some()),
        ("photonPersistentDisk", v.photon_persistent_disk.is_some()),
        ("portworxVolume", v.portworx_volume.is_some()),
        ("scaleIO", v.scale_io.is_some()),
        ("storageos", v.storageos.is_some()),
    ];
    // A volume with no source at all is an emptyDir once the API server has defaulted it,
    // and admission judges the defaulted pod; every source k8s-openapi knows is listed above.
    named
        .into_iter()
        .find(|(_, set)| *set)
        .map(|(name, _)| name)
}

fn restricted_volumes(pod: &Pod) -> Option<Violation> {
    let mut names = Vec::new();
    let mut types = BTreeSet::new();
    let mut first = None;
    for (i, v) in pod.spec.volumes.iter().flatten().enumerate() {
        if let Some(kind) = restricted_type(v) {
            names.push(v.name.as_str());
            types.insert(kind);
            first.get_or_insert_with(|| format!("spec.volumes[{i}].{kind}"));
        }
    }
    let n = names.len();
    let types: Vec<&str> = types.into_iter().collect();
    Some(violation(
        "restrictedVolumes",
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", n),
            join_quote(&names),
            pluralize("uses", "use", n),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                types.len()
            ),
            join_quote(&types)
        ),
        first?,
    ))
}

/// Stricter than pod-security-admission v1.35 on purpose: upstream lets a pod with
/// `hostUsers: false` run as root (its root is not the node's), but on a cluster without user
/// namespaces (`UserNamespacesSupport` off, the default before 1.33) the API server drops
/// `hostUsers` and the pod would run as the node's root. The operator cannot tell which cluster
/// it is on, so root is refused either way (the same holds for [`run_as_user`]).
fn run_as_non_root(pod: &Pod) -> Option<Violation> {
    let pod_says = pod.security().and_then(|s| s.run_as_non_root);
    let pod_false = pod_says == Some(false);
    let mut explicit = Vec::new();
    let mut implicit = Vec::new();
    let mut first_explicit = None;
    for c in &pod.containers {
        match c.security.and_then(|s| s.run_as_non_root) {
            Some(false) => {
                explicit.push(c.name);
                first_explicit
                    .get_or_insert_with(|| format!("{}.securityContext.runAsNonRoot", c.path));
            }
            Some(true) => {}
            None if pod_says != Some(true) => implicit.push(c.name),
            None => {}
        }
    }
    if pod_false || !explicit.is_empty() {
        let path = if pod_false {
            "spec.securityContext.runAsNonRoot".to_owned()
        } else {
            first_explicit.unwrap_or_default()
        };
        return Some(violation(
            "runAsNonRoot",
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters(pod_false, &explicit)
            ),
            path,
        ));
    }
    if implicit.is_empty() {
        return None;
    }
    // The pod-level field covers every container, so it is the one to name.
    Some(violation(
        "runAsNonRoot",
        "runAsNonRoot != true",
        format!(
            "pod or {} must set securityContext.runAsNonRoot=true",
            containers_phrase(&implicit)
        ),
        "spec.securityContext.runAsNonRoot".to_owned(),
    ))
}

fn run_as_user(pod: &Pod) -> Option<Violation> {
    let by_pod = pod.security().and_then(|s| s.run_as_user) == Some(0);
    let mut first = by_pod.then(|| "spec.securityContext.runAsUser".to_owned());
    let mut bad = Vec::new();
    for c in &pod.containers {
        if c.security.and_then(|s| s.run_as_user) == Some(0) {
            bad.push(c.name);
            first.get_or_insert_with(|| format!("{}.securityContext.runAsUser", c.path));
        }
    }
    Some(violation(
        "runAsUser",
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters(by_pod, &bad)),
        first?,
    ))
}

fn seccomp_profile(pod: &Pod) -> Option<Violation> {
    if pod.is_windows() {
        return None;
    }
    let mut bad_values = BTreeSet::new();
    let pod_profile = pod.security().and_then(|s| s.seccomp_profile.as_ref());
    let by_pod = pod_profile.is_some_and(|p| !confined_seccomp(&p.type_));
    let pod_confined = pod_profile.is_some_and(|p| confined_seccomp(&p.type_));
    let mut first = None;
    if by_pod {
        bad_values.insert(pod_profile.map(|p| p.type_.clone()).unwrap_or_default());
        first = Some("spec.securityContext.seccompProfile.type".to_owned());
    }
    let mut explicit = Vec::new();
    let mut implicit = Vec::new();
    for c in &pod.containers {
        match c.security.and_then(|s| s.seccomp_profile.as_ref()) {
            Some(p) if !confined_seccomp(&p.type_) => {
                explicit.push(c.name);
                bad_values.insert(p.type_.clone());
                first.get_or_insert_with(|| {
                    format!("{}.securityContext.seccompProfile.type", c.path)
                });
            }
            Some(_) => {}
            None if !pod_confined => implicit.push(c.name),
            None => {}
        }
    }
    if let Some(first) = first {
        let values: Vec<String> = bad_values.into_iter().collect();
        return Some(violation(
            "seccompProfile_restricted",
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters(by_pod, &explicit),
                join_quote(&values)
            ),
            first,
        ));
    }
    if implicit.is_empty() {
        return None;
    }
    Some(violation(
        "seccompProfile_restricted",
        "seccompProfile",
        format!(
            r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
            containers_phrase(&implicit)
        ),
        "spec.securityContext.seccompProfile.type".to_owned(),
    ))
}
