//! What this machine says about a run before it starts, the same for a real run and for
//! `--dry-run`: that each target command can be started, and that each CPU limit can bind.
//! The dry run adds how the limits will be enforced.

use std::path::Path;

use crate::resource::validate::FieldError;
use crate::resource::{BenchmarkRunSpec, ValidatedRun};

/// Each target command (of the target and of every variant) whose program cannot be found:
/// a path that is no executable file, or a name on no folder of `PATH`. A run refuses these
/// (exit 2) rather than start the cell and fail it.
pub fn missing_programs(spec: &BenchmarkRunSpec) -> Vec<FieldError> {
    let mut fields = vec![("spec.target.command".to_owned(), &spec.target.command)];
    for (i, v) in spec.variants.iter().enumerate() {
        fields.push((format!("spec.variants[{i}].command"), &v.command));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    fields
        .into_iter()
        .filter_map(|(field, command)| {
            let program = command.first()?;
            let why = unresolved(program, &path)?;
            Some(FieldError::new(format!("{field}[0]"), why))
        })
        .collect()
}

/// Why `program` cannot be started, or None when it can: run as a path when it holds a `/`
/// (relative to the current folder, where the run starts it), else looked up on `path`.
fn unresolved(program: &str, path: &std::ffi::OsStr) -> Option<String> {
    if program.contains('/') {
        return (!is_executable(Path::new(program)))
            .then(|| format!("{program:?} is not an executable file (from {})", cwd()));
    }
    let found = std::env::split_paths(path).any(|dir| is_executable(&dir.join(program)));
    (!found).then(|| format!("{program:?} is not on PATH: give its path, or install it"))
}

fn cwd() -> String {
    std::env::current_dir().map_or_else(|_| "here".into(), |d| d.display().to_string())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A warning per configuration whose CPU per replica is more than this machine has: its
/// quota cannot bind, so the cell runs with the machine's cores and its figures are not those
/// of the CPU it names. A run goes on (a cluster node may have them); it says so first.
pub fn cpu_warnings(run: &ValidatedRun) -> Vec<String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut said = Vec::new();
    let mut warnings = Vec::new();
    for (i, c) in run.spec().configurations.iter().enumerate() {
        let Ok(cpu) = c.cpu.cpu_cores() else { continue };
        if cpu > cores as f64 && !said.contains(&c.name) {
            said.push(c.name.clone());
            warnings.push(format!(
                "spec.configurations[{i}].cpu: {} CPUs per replica, but this machine has {cores}: \
                 the quota cannot hold it, so {} runs with at most {cores} and its figures are \
                 not those of {} CPUs",
                c.cpu, c.name, c.cpu
            ));
        }
    }
    warnings
}

/// How CPU limits will be enforced here, in words: found as a run finds it (its parent cgroup
/// made and removed again at once).
pub fn enforcement() -> String {
    let backend = super::cgroup::Backend::detect();
    backend.remove();
    match &backend {
        super::cgroup::Backend::V2 { .. } => {
            "cgroup v2: each replica's cpu is a CPU-time quota (cpu.max)".into()
        }
        super::cgroup::Backend::V1 { .. } => {
            "cgroup v1: each replica's cpu is a CPU-time quota (cpu.cfs_quota_us)".into()
        }
        super::cgroup::Backend::Affinity { reason } => format!(
            "CPU affinity only: each replica is pinned to as many CPUs as its cpu rounds up to, \
             which limits parallelism, not CPU time (no writable cgroup: {reason}; run as root \
             or with a delegated cgroup v2 subtree for quotas)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_found_by_path_or_on_path() {
        let path = std::ffi::OsString::from("/bin:/usr/bin");
        assert_eq!(unresolved("sh", &path), None);
        assert_eq!(unresolved("/bin/sh", &path), None);
        let missing = unresolved("no-such-program-x", &path).unwrap();
        assert!(missing.contains("is not on PATH"), "{missing}");
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::write(&data, "x").unwrap();
        let not_exec = unresolved(data.to_str().unwrap(), &path).unwrap();
        assert!(not_exec.contains("is not an executable file"), "{not_exec}");
    }

    #[test]
    fn a_cpu_beyond_the_machine_is_warned_of() {
        let cores = std::thread::available_parallelism().unwrap().get();
        let yaml = include_str!("../../../../manifests/samples/quickstart.yaml").replacen(
            "cpu: \"2\"",
            &format!("cpu: \"{}\"", cores * 256),
            1,
        );
        let run = ValidatedRun::parse(&yaml).unwrap();
        let warnings = cpu_warnings(&run);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(&format!(
                "spec.configurations[0].cpu: {} CPUs per replica, but this machine has {cores}",
                cores * 256
            )),
            "{warnings:?}"
        );
    }
}
