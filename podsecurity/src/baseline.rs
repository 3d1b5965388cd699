//! The baseline checks: what lets a pod reach beyond its container (host namespaces, paths,
//! ports and processes, privileged mode, extra capabilities, unconfined security modules).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::SELinuxOptions;

use super::pod::{Ctr, Pod, containers_phrase, join_quote, pluralize, setters};
use super::{Check, Violation};

/// Every baseline check, in Pod Security admission's order (by id).
pub(super) const CHECKS: [Check; 12] = [
    ("appArmorProfile", app_armor_profile),
    ("capabilities_baseline", capabilities),
    ("hostNamespaces", host_namespaces),
    ("hostPathVolumes", host_path_volumes),
    ("hostPorts", host_ports),
    ("hostProbesAndHostLifecycle", host_probes_and_lifecycle),
    ("privileged", privileged),
    ("procMount", proc_mount),
    ("seLinuxOptions", se_linux_options),
    ("seccompProfile_baseline", seccomp_profile),
    ("sysctls", sysctls),
    ("windowsHostProcess", windows_host_process),
];

/// The capabilities a container may add at baseline: the container runtimes' defaults.
const DEFAULT_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The sysctls a pod may set at baseline (the namespaced, "safe" ones, as of v1.32).
const SAFE_SYSCTLS: [&str; 12] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

/// SELinux types a pod may ask for (as of v1.31); "" leaves the runtime's default.
const SELINUX_TYPES: [&str; 5] = [
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// The deprecated per-container AppArmor annotation, still honoured by the kubelet.
const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

fn violation(
    check: &'static str,
    reason: impl Into<String>,
    detail: String,
    path: String,
) -> Violation {
    Violation {
        check,
        reason: reason.into(),
        detail,
        path,
    }
}

fn app_armor_profile(pod: &Pod) -> Option<Violation> {
    let allowed_type = |t: &str| t == "RuntimeDefault" || t == "Localhost";
    let mut bad_values = BTreeSet::new();
    let mut paths = Vec::new();
    let mut by_pod = false;
    if let Some(profile) = pod.security().and_then(|s| s.app_armor_profile.as_ref())
        && !allowed_type(&profile.type_)
    {
        by_pod = true;
        bad_values.insert(profile.type_.clone());
        paths.push("spec.securityContext.appArmorProfile.type".to_owned());
    }
    let mut bad_containers = Vec::new();
    for c in &pod.containers {
        if let Some(profile) = c.security.and_then(|s| s.app_armor_profile.as_ref())
            && !allowed_type(&profile.type_)
        {
            bad_containers.push(c.name);
            bad_values.insert(profile.type_.clone());
            paths.push(format!("{}.securityContext.appArmorProfile.type", c.path));
        }
    }
    let mut bad_annotations = Vec::new();
    for (key, value) in pod.annotations.into_iter().flatten() {
        let allowed_value =
            value.is_empty() || value == "runtime/default" || value.starts_with("localhost/");
        if key.starts_with(APPARMOR_ANNOTATION_PREFIX) && !allowed_value {
            bad_annotations.push(format!("{key}={value:?}"));
            paths.push(format!("metadata.annotations.{key}"));
        }
    }
    let first = paths.into_iter().next()?;
    let mut who = setters(by_pod, &bad_containers);
    let mut values: Vec<String> = bad_values.into_iter().collect();
    if !bad_annotations.is_empty() {
        bad_annotations.sort();
        let n = bad_annotations.len();
        values.extend(bad_annotations);
        if !who.is_empty() {
            who.push_str(" and ");
        }
        who.push_str(pluralize("annotation", "annotations", n));
    }
    Some(violation(
        "appArmorProfile",
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        format!(
            "{who} must not set AppArmor profile type to {}",
            join_quote(&values)
        ),
        first,
    ))
}

fn capabilities(pod: &Pod) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    let mut added = BTreeSet::new();
    let mut first = None;
    for c in &pod.containers {
        let adds = c
            .security
            .and_then(|s| s.capabilities.as_ref())
            .and_then(|caps| caps.add.as_ref());
        let mut bad = false;
        for cap in adds.into_iter().flatten() {
            if !DEFAULT_CAPABILITIES.contains(&cap.as_str()) {
                bad = true;
                added.insert(cap.clone());
            }
        }
        if bad {
            bad_containers.push(c.name);
            first.get_or_insert_with(|| format!("{}.securityContext.capabilities.add", c.path));
        }
    }
    let added: Vec<String> = added.into_iter().collect();
    Some(violation(
        "capabilities_baseline",
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad_containers),
            join_quote(&added)
        ),
        first?,
    ))
}

fn host_namespaces(pod: &Pod) -> Option<Violation> {
    let spec = pod.spec;
    let set: Vec<&str> = [
        ("hostNetwork", spec.host_network),
        ("hostPID", spec.host_pid),
        ("hostIPC", spec.host_ipc),
    ]
    .into_iter()
    .filter(|(_, on)| *on == Some(true))
    .map(|(field, _)| field)
    .collect();
    let first = set.first()?;
    Some(violation(
        "hostNamespaces",
        "host namespaces",
        set.iter()
            .map(|f| format!("{f}=true"))
            .collect::<Vec<_>>()
            .join(", "),
        format!("spec.{first}"),
    ))
}

fn host_path_volumes(pod: &Pod) -> Option<Violation> {
    let mut names = Vec::new();
    let mut first = None;
    for (i, v) in pod.spec.volumes.iter().flatten().enumerate() {
        if v.host_path.is_some() {
            names.push(v.name.as_str());
            first.get_or_insert_with(|| format!("spec.volumes[{i}].hostPath"));
        }
    }
    Some(violation(
        "hostPathVolumes",
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", names.len()),
            join_quote(&names)
        ),
        first?,
    ))
}

fn host_ports(pod: &Pod) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    // Sorted as text, as admission sorts them.
    let mut ports = BTreeSet::new();
    let mut first = None;
    for c in &pod.containers {
        let mut bad = false;
        for (j, p) in c.ports.iter().enumerate() {
            if let Some(host_port) = p.host_port.filter(|&h| h != 0) {
                bad = true;
                ports.insert(host_port.to_string());
                first.get_or_insert_with(|| format!("{}.ports[{j}].hostPort", c.path));
            }
        }
        if bad {
            bad_containers.push(c.name);
        }
    }
    let n = bad_containers.len();
    Some(violation(
        "hostPorts",
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", n),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.into_iter().collect::<Vec<_>>().join(", ")
        ),
        first?,
    ))
}

/// The hosts a container's probes and lifecycle hooks name, each with its field path: a probe
/// or hook aimed at another host would make the kubelet connect there on the pod's behalf.
fn probe_hosts(c: &Ctr) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut look = |at: String,
                    http: Option<&k8s_openapi::api::core::v1::HTTPGetAction>,
                    tcp: Option<&k8s_openapi::api::core::v1::TCPSocketAction>| {
        if let Some(host) = http
            .and_then(|h| h.host.as_deref())
            .filter(|h| !h.is_empty())
        {
            found.push((host.to_owned(), format!("{at}.httpGet.host")));
        }
        if let Some(host) = tcp
            .and_then(|t| t.host.as_deref())
            .filter(|h| !h.is_empty())
        {
            found.push((host.to_owned(), format!("{at}.tcpSocket.host")));
        }
    };
    for (field, probe) in c.probes {
        if let Some(p) = probe {
            look(
                format!("{}.{field}", c.path),
                p.http_get.as_ref(),
                p.tcp_socket.as_ref(),
            );
        }
    }
    if let Some(lifecycle) = c.lifecycle {
        for (field, hook) in [
            ("postStart", lifecycle.post_start.as_ref()),
            ("preStop", lifecycle.pre_stop.as_ref()),
        ] {
            if let Some(h) = hook {
                look(
                    format!("{}.lifecycle.{field}", c.path),
                    h.http_get.as_ref(),
                    h.tcp_socket.as_ref(),
                );
            }
        }
    }
    found
}

fn host_probes_and_lifecycle(pod: &Pod) -> Option<Violation> {
    let mut bad_containers = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    let mut first = None;
    for c in &pod.containers {
        for (host, path) in probe_hosts(c) {
            bad_containers.insert(c.name);
            hosts.insert(host);
            first.get_or_insert(path);
        }
    }
    let containers: Vec<&str> = bad_containers.into_iter().collect();
    let hosts: Vec<String> = hosts.into_iter().collect();
    Some(violation(
        "hostProbesAndHostLifecycle",
        "probe or lifecycle host",
        format!(
            "{} {} {} {}",
            containers_phrase(&containers),
            pluralize("uses", "use", containers.len()),
            pluralize(
                "probe or lifecycle host",
                "probe or lifecycle hosts",
                hosts.len()
            ),
            join_quote(&hosts)
        ),
        first?,
    ))
}

fn privileged(pod: &Pod) -> Option<Violation> {
    let bad: Vec<&Ctr> = pod
        .containers
        .iter()
        .filter(|c| c.security.and_then(|s| s.privileged) == Some(true))
        .collect();
    let first = bad.first()?;
    let names: Vec<&str> = bad.iter().map(|c| c.name).collect();
    Some(violation(
        "privileged",
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&names)
        ),
        format!("{}.securityContext.privileged", first.path),
    ))
}

/// Containers whose /proc is not masked (`procMount` other than `Default`). Shared with the
/// restricted level, which refuses it even in a user namespace.
pub(super) fn unmasked_proc(pod: &Pod, check: &'static str) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    let mut types = BTreeSet::new();
    let mut first = None;
    for c in &pod.containers {
        if let Some(mount) = c.security.and_then(|s| s.proc_mount.as_deref())
            && mount != "Default"
        {
            bad_containers.push(c.name);
            types.insert(mount.to_owned());
            first.get_or_insert_with(|| format!("{}.securityContext.procMount", c.path));
        }
    }
    let types: Vec<String> = types.into_iter().collect();
    Some(violation(
        check,
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad_containers),
            join_quote(&types)
        ),
        first?,
    ))
}

fn proc_mount(pod: &Pod) -> Option<Violation> {
    if pod.in_user_namespace() {
        return None;
    }
    unmasked_proc(pod, "procMount")
}

fn se_linux_options(pod: &Pod) -> Option<Violation> {
    let mut bad_types = BTreeSet::new();
    let (mut set_user, mut set_role) = (false, false);
    let mut valid = |o: &SELinuxOptions| {
        let mut ok = true;
        let kind = o.type_.as_deref().unwrap_or_default();
        if !SELINUX_TYPES.contains(&kind) {
            ok = false;
            bad_types.insert(kind.to_owned());
        }
        if o.user.as_deref().is_some_and(|u| !u.is_empty()) {
            ok = false;
            set_user = true;
        }
        if o.role.as_deref().is_some_and(|r| !r.is_empty()) {
            ok = false;
            set_role = true;
        }
        ok
    };
    let mut first = None;
    let by_pod = pod
        .security()
        .and_then(|s| s.se_linux_options.as_ref())
        .is_some_and(|o| !valid(o));
    if by_pod {
        first = Some("spec.securityContext.seLinuxOptions".to_owned());
    }
    let mut bad_containers = Vec::new();
    for c in &pod.containers {
        if let Some(o) = c.security.and_then(|s| s.se_linux_options.as_ref())
            && !valid(o)
        {
            bad_containers.push(c.name);
            first.get_or_insert_with(|| format!("{}.securityContext.seLinuxOptions", c.path));
        }
    }
    let first = first?;
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        let types: Vec<String> = bad_types.into_iter().collect();
        data.push(format!(
            "{} {}",
            pluralize("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if set_user {
        data.push("user may not be set".to_owned());
    }
    if set_role {
        data.push("role may not be set".to_owned());
    }
    Some(violation(
        "seLinuxOptions",
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters(by_pod, &bad_containers),
            data.join("; ")
        ),
        first,
    ))
}

/// A seccomp profile type a pod may name: the runtime's default or one on the node.
pub(super) fn confined_seccomp(kind: &str) -> bool {
    kind == "RuntimeDefault" || kind == "Localhost"
}

fn seccomp_profile(pod: &Pod) -> Option<Violation> {
    let mut bad_values = BTreeSet::new();
    let mut first = None;
    let by_pod = match pod.security().and_then(|s| s.seccomp_profile.as_ref()) {
        Some(p) if !confined_seccomp(&p.type_) => {
            bad_values.insert(p.type_.clone());
            first = Some("spec.securityContext.seccompProfile.type".to_owned());
            true
        }
        _ => false,
    };
    let mut bad_containers = Vec::new();
    for c in &pod.containers {
        if let Some(p) = c.security.and_then(|s| s.seccomp_profile.as_ref())
            && !confined_seccomp(&p.type_)
        {
            bad_containers.push(c.name);
            bad_values.insert(p.type_.clone());
            first.get_or_insert_with(|| format!("{}.securityContext.seccompProfile.type", c.path));
        }
    }
    let values: Vec<String> = bad_values.into_iter().collect();
    Some(violation(
        "seccompProfile_baseline",
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters(by_pod, &bad_containers),
            join_quote(&values)
        ),
        first?,
    ))
}

fn sysctls(pod: &Pod) -> Option<Violation> {
    let mut names = Vec::new();
    let mut first = None;
    let all = pod.security().and_then(|s| s.sysctls.as_ref());
    for (i, s) in all.into_iter().flatten().enumerate() {
        if !SAFE_SYSCTLS.contains(&s.name.as_str()) {
            names.push(s.name.as_str());
            first.get_or_insert_with(|| format!("spec.securityContext.sysctls[{i}].name"));
        }
    }
    Some(violation(
        "sysctls",
        "forbidden sysctls",
        names.join(", "),
        first?,
    ))
}

fn windows_host_process(pod: &Pod) -> Option<Violation> {
    let mut first = None;
    let mut bad_containers = Vec::new();
    for c in &pod.containers {
        let on = c
            .security
            .and_then(|s| s.windows_options.as_ref())
            .and_then(|w| w.host_process);
        if on == Some(true) {
            bad_containers.push(c.name);
            first.get_or_insert_with(|| {
                format!("{}.securityContext.windowsOptions.hostProcess", c.path)
            });
        }
    }
    let by_pod = pod
        .security()
        .and_then(|s| s.windows_options.as_ref())
        .and_then(|w| w.host_process)
        == Some(true);
    if by_pod {
        // The pod's own setting comes first in the message, so it is the field named.
        first = Some("spec.securityContext.windowsOptions.hostProcess".to_owned());
    }
    Some(violation(
        "windowsHostProcess",
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters(by_pod, &bad_containers)
        ),
        first?,
    ))
}
