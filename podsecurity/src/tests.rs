use k8s_openapi::api::core::v1::Pod;

use super::*;

/// A pod that passes restricted: every field the restricted checks ask for, set.
const RESTRICTED_POD: &str = "
metadata: {name: p}
spec:
  securityContext:
    runAsNonRoot: true
    seccompProfile: {type: RuntimeDefault}
  initContainers:
  - name: init
    image: busybox
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
  containers:
  - name: target
    image: app
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}
";

/// The restricted pod with `edit` applied to its YAML value.
fn pod_with(edit: impl FnOnce(&mut serde_json::Value)) -> Pod {
    let mut value: serde_json::Value = serde_yaml::from_str(RESTRICTED_POD).unwrap();
    edit(&mut value);
    serde_json::from_value(value).unwrap()
}

fn violations(level: Level, pod: &Pod) -> Vec<Violation> {
    check(level, Some(&pod.metadata), pod.spec.as_ref().unwrap())
}

/// Sets `value` at a `/`-separated pointer, creating objects on the way.
fn set(v: &mut serde_json::Value, pointer: &str, value: serde_json::Value) {
    let mut at = v;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        at = match at {
            serde_json::Value::Array(items) => &mut items[part.parse::<usize>().unwrap()],
            serde_json::Value::Object(map) => {
                if last {
                    map.insert((*part).to_owned(), value);
                    return;
                }
                map.entry(*part).or_insert_with(|| serde_json::json!({}))
            }
            other => panic!("cannot descend into {other}"),
        };
        if last {
            *at = value;
            return;
        }
    }
}

fn refused_by(level: Level, pointer: &str, value: serde_json::Value) -> Vec<Violation> {
    let pod = pod_with(|v| set(v, pointer, value));
    violations(level, &pod)
}

/// The one violation of `level` after setting `pointer` to `value`, checked by id, message
/// and path.
fn only(level: Level, pointer: &str, value: serde_json::Value) -> Violation {
    let got = refused_by(level, pointer, value);
    assert_eq!(got.len(), 1, "{pointer}: {got:#?}");
    got.into_iter().next().unwrap()
}

fn assert_refused(
    level: Level,
    pointer: &str,
    value: serde_json::Value,
    check: &str,
    message: &str,
    path: &str,
) {
    let v = only(level, pointer, value);
    assert_eq!(v.check, check, "{pointer}");
    assert_eq!(v.message(), message, "{pointer}");
    assert_eq!(v.path, path, "{pointer}");
}

use serde_json::json;

#[test]
fn level_names_parse_and_an_unknown_name_is_an_error_never_privileged() {
    for level in Level::ALL {
        assert_eq!(level.name().parse::<Level>().unwrap(), level);
    }
    let err = "Restricted".parse::<Level>().unwrap_err();
    assert!(
        err.to_string().contains("privileged, baseline, restricted"),
        "{err}"
    );
    assert!("".parse::<Level>().is_err());
    assert_eq!(Level::default(), Level::Restricted);
}

#[test]
fn a_namespace_label_tightens_the_install_level_and_never_loosens_it() {
    use Level::*;
    assert_eq!(Privileged.in_namespace(None), Privileged);
    assert_eq!(Privileged.in_namespace(Some("baseline")), Baseline);
    assert_eq!(Baseline.in_namespace(Some("restricted")), Restricted);
    assert_eq!(Restricted.in_namespace(Some("privileged")), Restricted);
    assert_eq!(Baseline.in_namespace(Some("privileged")), Baseline);
    // A value that names no level reads as the strictest, as admission reads it.
    assert_eq!(Privileged.in_namespace(Some("restricte")), Restricted);
}

#[test]
fn the_restricted_pod_passes_every_level_and_privileged_checks_nothing() {
    let pod = pod_with(|_| {});
    for level in Level::ALL {
        assert!(violations(level, &pod).is_empty(), "{level}");
    }
    let wild = pod_with(|v| {
        set(v, "/spec/hostNetwork", json!(true));
        set(
            v,
            "/spec/containers/0/securityContext/privileged",
            json!(true),
        );
    });
    assert!(violations(Level::Privileged, &wild).is_empty());
    assert_eq!(violations(Level::Baseline, &wild).len(), 2);
}

#[test]
fn the_issues_escalating_template_is_refused_at_restricted_with_admissions_words() {
    let pod = pod_with(|v| {
        set(
            v,
            "/spec/securityContext",
            json!({"runAsUser": 0, "runAsNonRoot": false, "seccompProfile": {"type": "Unconfined"}}),
        );
        set(
            v,
            "/spec/containers/0/securityContext",
            json!({"runAsUser": 0, "runAsNonRoot": false, "allowPrivilegeEscalation": true,
                   "readOnlyRootFilesystem": false,
                   "capabilities": {"add": ["SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE"]}}),
        );
    });
    let got = violations(Level::Restricted, &pod);
    let ids: Vec<&str> = got.iter().map(|v| v.check).collect();
    assert_eq!(
        ids,
        [
            "allowPrivilegeEscalation",
            "capabilities_restricted",
            "runAsNonRoot",
            "runAsUser",
            "seccompProfile_restricted"
        ]
    );
    assert_eq!(
        got[0].message(),
        r#"allowPrivilegeEscalation != false (container "target" must set securityContext.allowPrivilegeEscalation=false)"#
    );
    assert_eq!(
        got[0].path,
        "spec.containers[0].securityContext.allowPrivilegeEscalation"
    );
    assert_eq!(
        got[1].message(),
        r#"unrestricted capabilities (container "target" must set securityContext.capabilities.drop=["ALL"]; container "target" must not include "NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE" in securityContext.capabilities.add)"#
    );
    assert_eq!(
        got[2].message(),
        r#"runAsNonRoot != true (pod and container "target" must not set securityContext.runAsNonRoot=false)"#
    );
    assert_eq!(got[2].path, "spec.securityContext.runAsNonRoot");
    assert_eq!(
        got[3].message(),
        r#"runAsUser=0 (pod and container "target" must not set runAsUser=0)"#
    );
    assert_eq!(
        got[4].message(),
        r#"seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")"#
    );
    // At baseline the same pod only adds capabilities beyond the defaults.
    let base = violations(Level::Baseline, &pod);
    assert_eq!(
        base.iter().map(|v| v.check).collect::<Vec<_>>(),
        ["capabilities_baseline", "seccompProfile_baseline"]
    );
    assert_eq!(
        base[0].message(),
        r#"non-default capabilities (container "target" must not include "NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE" in securityContext.capabilities.add)"#
    );
}

#[test]
fn baseline_host_access_is_refused() {
    assert_refused(
        Level::Baseline,
        "/spec/hostPID",
        json!(true),
        "hostNamespaces",
        "host namespaces (hostPID=true)",
        "spec.hostPID",
    );
    assert_refused(
        Level::Baseline,
        "/spec/volumes",
        json!([{"name": "ok", "emptyDir": {}}, {"name": "root", "hostPath": {"path": "/"}}]),
        "hostPathVolumes",
        r#"hostPath volumes (volume "root")"#,
        "spec.volumes[1].hostPath",
    );
    assert_refused(
        Level::Baseline,
        "/spec/containers/0/ports",
        json!([{"containerPort": 80, "hostPort": 80}, {"containerPort": 9000, "hostPort": 9000}]),
        "hostPorts",
        r#"hostPort (container "target" uses hostPorts 80, 9000)"#,
        "spec.containers[0].ports[0].hostPort",
    );
    assert_refused(
        Level::Baseline,
        "/spec/initContainers/0/readinessProbe",
        json!({"httpGet": {"host": "10.0.0.1", "port": 80}}),
        "hostProbesAndHostLifecycle",
        r#"probe or lifecycle host (container "init" uses probe or lifecycle host "10.0.0.1")"#,
        "spec.initContainers[0].readinessProbe.httpGet.host",
    );
    assert_refused(
        Level::Baseline,
        "/spec/containers/0/lifecycle",
        json!({"preStop": {"tcpSocket": {"host": "db", "port": 5432}}}),
        "hostProbesAndHostLifecycle",
        r#"probe or lifecycle host (container "target" uses probe or lifecycle host "db")"#,
        "spec.containers[0].lifecycle.preStop.tcpSocket.host",
    );
    assert_refused(
        Level::Baseline,
        "/spec/containers/0/securityContext/privileged",
        json!(true),
        "privileged",
        r#"privileged (container "target" must not set securityContext.privileged=true)"#,
        "spec.containers[0].securityContext.privileged",
    );
    assert_refused(
        Level::Baseline,
        "/spec/securityContext/windowsOptions",
        json!({"hostProcess": true}),
        "windowsHostProcess",
        "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)",
        "spec.securityContext.windowsOptions.hostProcess",
    );
}

#[test]
fn baseline_capabilities_beyond_the_defaults_are_refused() {
    // CHOWN is a runtime default: fine at baseline (restricted refuses any but
    // NET_BIND_SERVICE).
    let pod = pod_with(|v| {
        set(
            v,
            "/spec/containers/0/securityContext/capabilities/add",
            json!(["CHOWN"]),
        )
    });
    assert!(violations(Level::Baseline, &pod).is_empty());
    assert_eq!(
        violations(Level::Restricted, &pod)[0].check,
        "capabilities_restricted"
    );
    assert_refused(
        Level::Baseline,
        "/spec/initContainers/0/securityContext/capabilities/add",
        json!(["NET_RAW", "CHOWN"]),
        "capabilities_baseline",
        r#"non-default capabilities (container "init" must not include "NET_RAW" in securityContext.capabilities.add)"#,
        "spec.initContainers[0].securityContext.capabilities.add",
    );
}

#[test]
fn baseline_security_modules_must_stay_confined() {
    assert_refused(
        Level::Baseline,
        "/spec/containers/0/securityContext/appArmorProfile",
        json!({"type": "Unconfined"}),
        "appArmorProfile",
        r#"forbidden AppArmor profile (container "target" must not set AppArmor profile type to "Unconfined")"#,
        "spec.containers[0].securityContext.appArmorProfile.type",
    );
    assert_refused(
        Level::Baseline,
        "/metadata/annotations",
        json!({"container.apparmor.security.beta.kubernetes.io/target": "unconfined"}),
        "appArmorProfile",
        r#"forbidden AppArmor profile (annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/target="unconfined"")"#,
        "metadata.annotations.container.apparmor.security.beta.kubernetes.io/target",
    );
    assert_refused(
        Level::Baseline,
        "/spec/securityContext/seLinuxOptions",
        json!({"type": "spc_t", "user": "system_u"}),
        "seLinuxOptions",
        r#"seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set)"#,
        "spec.securityContext.seLinuxOptions",
    );
    // container_engine_t is allowed as of v1.31.
    let pod = pod_with(|v| {
        set(
            v,
            "/spec/containers/0/securityContext/seLinuxOptions",
            json!({"type": "container_engine_t", "level": "s0:c1"}),
        )
    });
    assert!(violations(Level::Restricted, &pod).is_empty());
    assert_refused(
        Level::Baseline,
        "/spec/containers/0/securityContext/seccompProfile",
        json!({"type": "Unconfined"}),
        "seccompProfile_baseline",
        r#"seccompProfile (container "target" must not set securityContext.seccompProfile.type to "Unconfined")"#,
        "spec.containers[0].securityContext.seccompProfile.type",
    );
    assert_refused(
        Level::Baseline,
        "/spec/containers/0/securityContext/procMount",
        json!("Unmasked"),
        "procMount",
        r#"procMount (container "target" must not set securityContext.procMount to "Unmasked")"#,
        "spec.containers[0].securityContext.procMount",
    );
}

#[test]
fn baseline_allows_only_the_safe_sysctls() {
    let pod = pod_with(|v| {
        set(
            v,
            "/spec/securityContext/sysctls",
            json!([{"name": "net.ipv4.tcp_rmem", "value": "4096 87380 6291456"}]),
        )
    });
    assert!(violations(Level::Baseline, &pod).is_empty());
    assert_refused(
        Level::Baseline,
        "/spec/securityContext/sysctls",
        json!([{"name": "net.ipv4.tcp_syncookies", "value": "1"},
               {"name": "kernel.msgmax", "value": "1"}, {"name": "vm.swappiness", "value": "1"}]),
        "sysctls",
        "forbidden sysctls (kernel.msgmax, vm.swappiness)",
        "spec.securityContext.sysctls[1].name",
    );
}

#[test]
fn restricted_hardening_must_be_asked_for() {
    assert_refused(
        Level::Restricted,
        "/spec/initContainers/0/securityContext",
        json!({"capabilities": {"drop": ["ALL"]}}),
        "allowPrivilegeEscalation",
        r#"allowPrivilegeEscalation != false (container "init" must set securityContext.allowPrivilegeEscalation=false)"#,
        "spec.initContainers[0].securityContext.allowPrivilegeEscalation",
    );
    assert_refused(
        Level::Restricted,
        "/spec/containers/0/securityContext/capabilities",
        json!({"drop": ["NET_RAW"]}),
        "capabilities_restricted",
        r#"unrestricted capabilities (container "target" must set securityContext.capabilities.drop=["ALL"])"#,
        "spec.containers[0].securityContext.capabilities.drop",
    );
    assert_refused(
        Level::Restricted,
        "/spec/securityContext",
        json!({"seccompProfile": {"type": "RuntimeDefault"}}),
        "runAsNonRoot",
        r#"runAsNonRoot != true (pod or containers "init", "target" must set securityContext.runAsNonRoot=true)"#,
        "spec.securityContext.runAsNonRoot",
    );
    assert_refused(
        Level::Restricted,
        "/spec/containers/0/securityContext/runAsUser",
        json!(0),
        "runAsUser",
        r#"runAsUser=0 (container "target" must not set runAsUser=0)"#,
        "spec.containers[0].securityContext.runAsUser",
    );
    assert_refused(
        Level::Restricted,
        "/spec/securityContext",
        json!({"runAsNonRoot": true}),
        "seccompProfile_restricted",
        r#"seccompProfile (pod or containers "init", "target" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
        "spec.securityContext.seccompProfile.type",
    );
    // Every container opting in is as good as the pod doing it.
    let pod = pod_with(|v| {
        set(v, "/spec/securityContext", json!({}));
        for c in ["initContainers", "containers"] {
            set(
                v,
                &format!("/spec/{c}/0/securityContext/runAsNonRoot"),
                json!(true),
            );
            set(
                v,
                &format!("/spec/{c}/0/securityContext/seccompProfile"),
                json!({"type": "Localhost", "localhostProfile": "p.json"}),
            );
        }
    });
    assert!(violations(Level::Restricted, &pod).is_empty());
}

#[test]
fn restricted_allows_only_the_volume_types_a_pod_owns() {
    let pod = pod_with(|v| {
        set(
            v,
            "/spec/volumes",
            json!([{"name": "a", "configMap": {"name": "c"}}, {"name": "b", "secret": {"secretName": "s"}},
                   {"name": "c", "emptyDir": {}}, {"name": "d", "projected": {"sources": []}},
                   {"name": "e", "persistentVolumeClaim": {"claimName": "x"}},
                   {"name": "f", "downwardAPI": {}}, {"name": "g", "image": {"reference": "x"}},
                   // No source: the API server makes it an emptyDir.
                   {"name": "h"}]),
        )
    });
    assert!(violations(Level::Restricted, &pod).is_empty());
    assert_refused(
        Level::Restricted,
        "/spec/volumes",
        json!([{"name": "ok", "emptyDir": {}}, {"name": "share", "nfs": {"server": "s", "path": "/"}},
               {"name": "repo", "gitRepo": {"repository": "r"}}]),
        "restrictedVolumes",
        r#"restricted volume types (volumes "share", "repo" use restricted volume types "gitRepo", "nfs")"#,
        "spec.volumes[1].nfs",
    );
    // hostPath is one of them: restricted names it once, under restrictedVolumes.
    assert_refused(
        Level::Restricted,
        "/spec/volumes",
        json!([{"name": "root", "hostPath": {"path": "/"}}]),
        "restrictedVolumes",
        r#"restricted volume types (volume "root" uses restricted volume type "hostPath")"#,
        "spec.volumes[0].hostPath",
    );
}

/// Baseline lets a pod in its own user namespace unmask /proc, as upstream does. Restricted
/// refuses its unmasked /proc, and, stricter than upstream v1.35, its root: on a cluster
/// without user namespaces the API server drops `hostUsers` and root would be the node's.
#[test]
fn a_user_namespace_relaxes_proc_at_baseline_but_restricted_still_refuses_root() {
    let pod = pod_with(|v| {
        set(v, "/spec/hostUsers", json!(false));
        set(
            v,
            "/spec/securityContext",
            json!({"runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}}),
        );
        set(
            v,
            "/spec/containers/0/securityContext/procMount",
            json!("Unmasked"),
        );
    });
    assert!(violations(Level::Baseline, &pod).is_empty());
    let mut ids: Vec<&str> = violations(Level::Restricted, &pod)
        .iter()
        .map(|v| v.check)
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["procMount_restricted", "runAsNonRoot", "runAsUser"]);
}

#[test]
fn a_windows_pod_is_not_asked_for_linux_only_fields() {
    let pod: Pod = serde_yaml::from_str(
        "spec:\n  os: {name: windows}\n  securityContext: {runAsNonRoot: true}\n  \
         containers: [{name: c, image: i}]\n",
    )
    .unwrap();
    assert!(violations(Level::Restricted, &pod).is_empty());
}

#[test]
fn restricted_runs_the_baseline_checks_it_keeps_then_its_own_in_admissions_order() {
    assert_eq!(
        check_ids(Level::Restricted),
        [
            "appArmorProfile",
            "hostNamespaces",
            "hostPorts",
            "hostProbesAndHostLifecycle",
            "privileged",
            "seLinuxOptions",
            "sysctls",
            "windowsHostProcess",
            "allowPrivilegeEscalation",
            "capabilities_restricted",
            "procMount_restricted",
            "restrictedVolumes",
            "runAsNonRoot",
            "runAsUser",
            "seccompProfile_restricted",
        ]
    );
    assert_eq!(check_ids(Level::Baseline).len(), 12);
    assert!(check_ids(Level::Privileged).is_empty());
}
