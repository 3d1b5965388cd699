//! Pod Security on every pod a run would have the operator create, judged before any is.
//!
//! The operator builds each cell's target Deployment and load-generator Job exactly as it will
//! apply them ([`super::build`]), and checks their pod templates at the level that applies
//! ([`benchmatrix_pod_security`]): the install's `--pod-security`, made stricter by the
//! run namespace's `pod-security.kubernetes.io/enforce` label. So what is judged is the merged
//! pod (the author's template with what the operator sets), and a pod that fails is refused
//! with the field of the run that made it fail, as an invalid template is (condition SpecValid
//! False, nothing created).
//!
//! Pure, and shared with `benchmatrix run`, which judges a file the same way before it runs.

use k8s_openapi::api::core::v1::PodTemplateSpec;

use super::build;
use crate::resource::ValidatedRun;
use crate::resource::validate::FieldError;
use benchmatrix_pod_security::{self as pod_security, Level, Violation};

/// Every Pod Security violation of the pods `v` would create at `level`, each at the run's
/// field that sets it (`spec.target.podTemplate.spec.containers[0].securityContext...`, or
/// a variant's template), once per distinct problem. `target_image` and `loadgen_image` are
/// the operator's defaults for runs that name none.
pub fn refusals(
    v: &ValidatedRun,
    level: Level,
    target_image: &str,
    loadgen_image: &str,
) -> Vec<FieldError> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let spec = v.spec();
    let mut errors: Vec<FieldError> = Vec::new();
    let mut add = |e: FieldError| {
        if !errors.contains(&e) {
            errors.push(e);
        }
    };
    for cell in v.cells() {
        let target = spec.target_of(cell.variant.as_ref());
        let deployment = build::deployment(v, cell, 0, target_image, Vec::new());
        for violation in judge(level, &deployment.spec.template) {
            add(match target.pod_template {
                // The author's template is where any of it can be changed: the operator's own
                // parts comply (see the tests), and it fills only what the template leaves out.
                Some(_) => at_field(level, &target.template_field, &violation),
                None => in_operators_pod(level, "spec.target", "target", &violation),
            });
        }
        let job = build::job(v, cell, 0, loadgen_image);
        if let Some(template) = job.spec.as_ref().map(|s| &s.template) {
            for violation in judge(level, template) {
                add(in_operators_pod(
                    level,
                    "spec.loadgen",
                    "load generator",
                    &violation,
                ));
            }
        }
    }
    errors
}

fn judge(level: Level, template: &PodTemplateSpec) -> Vec<Violation> {
    match &template.spec {
        Some(spec) => pod_security::check(level, template.metadata.as_ref(), spec),
        None => Vec::new(),
    }
}

/// `violates PodSecurity "restricted:latest": REASON (DETAIL)`, as Pod Security admission says
/// it, then the check's id.
fn message(level: Level, v: &Violation) -> String {
    format!(
        "violates PodSecurity \"{level}:latest\": {} [check {}]",
        v.message(),
        v.check
    )
}

fn at_field(level: Level, template_field: &str, v: &Violation) -> FieldError {
    FieldError::new(format!("{template_field}.{}", v.path), message(level, v))
}

/// A violation in a pod the run does not template: only the images and resources are the
/// author's there, so the field named is the part of the spec that makes the pod.
fn in_operators_pod(level: Level, field: &str, pod: &str, v: &Violation) -> FieldError {
    FieldError::new(
        field,
        format!(
            "{} (in the operator's {pod} pod, at {})",
            message(level, v),
            v.path
        ),
    )
}

#[cfg(test)]
mod corpus;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::validate::parse_benchmark_run;

    fn validated(yaml: &str) -> ValidatedRun {
        ValidatedRun::for_cluster(parse_benchmark_run(yaml).expect("valid")).expect("valid")
    }

    const WORKLOAD: &str = "
  configurations: [{name: c, cpu: 500m, memory: 64Mi}]
  workload:
    endpoints: [{name: e, path: /}]
    phases: [{name: p, duration: 1s, load: [{endpoint: e, connections: 1}]}]
";

    fn run_with_target(target: &str) -> ValidatedRun {
        validated(&format!(
            "apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {{name: r}}\n\
             spec:\n  target:\n{target}{WORKLOAD}"
        ))
    }

    fn refused(v: &ValidatedRun, level: Level) -> Vec<FieldError> {
        refusals(
            v,
            level,
            "ghcr.io/benchmatrix/target:1",
            "ghcr.io/benchmatrix/loadgen:1",
        )
    }

    #[test]
    fn the_operators_own_pods_pass_restricted() {
        // The built-in target and its load generator.
        let built_in = run_with_target("    port: 8080\n");
        assert!(refused(&built_in, Level::Restricted).is_empty());
        // The repository's own-service example: a template with no security context of its
        // own, given the operator's.
        let own = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/own-service/benchmarkrun.yaml"
        ))
        .unwrap();
        let own = validated(&own);
        assert!(
            refused(&own, Level::Restricted).is_empty(),
            "{:?}",
            refused(&own, Level::Restricted)
        );
    }

    #[test]
    fn the_issues_escalating_template_is_refused_at_its_fields_and_nothing_at_privileged() {
        let v = run_with_target(
            "    image: busybox:1.36\n    podTemplate:\n      spec:\n        \
             securityContext: {runAsUser: 0, runAsNonRoot: false, seccompProfile: {type: Unconfined}}\n        \
             containers:\n        - name: target\n          securityContext:\n            \
             runAsUser: 0\n            runAsNonRoot: false\n            \
             allowPrivilegeEscalation: true\n            readOnlyRootFilesystem: false\n            \
             capabilities: {add: [SYS_ADMIN, NET_ADMIN, SYS_PTRACE]}\n",
        );
        let errors = refused(&v, Level::Restricted);
        let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert_eq!(
            lines[0],
            "spec.target.podTemplate.spec.containers[0].securityContext.allowPrivilegeEscalation: \
             violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false \
             (container \"target\" must set securityContext.allowPrivilegeEscalation=false) \
             [check allowPrivilegeEscalation]"
        );
        assert!(lines[1].starts_with(
            "spec.target.podTemplate.spec.containers[0].securityContext.capabilities.drop: "
        ));
        assert!(lines[1].contains("[check capabilities_restricted]"));
        let baseline = refused(&v, Level::Baseline);
        assert_eq!(baseline.len(), 2, "{baseline:#?}");
        assert!(
            baseline[0]
                .message
                .ends_with("[check capabilities_baseline]")
        );
        assert!(refused(&v, Level::Privileged).is_empty());
    }

    #[test]
    fn a_variants_template_is_named_at_the_variant_and_a_sidecar_must_comply_itself() {
        let v = validated(&format!(
            "apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {{name: r}}\n\
             spec:\n  target: {{image: 'app:1'}}\n  variants:\n  - name: base\n  - name: mesh\n    \
             podTemplate:\n      spec:\n        containers:\n        - {{name: target}}\n        \
             - {{name: proxy, image: 'envoy:1'}}\n{WORKLOAD}"
        ));
        let errors = refused(&v, Level::Restricted);
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.variants[1].podTemplate.spec.containers[1].securityContext.allowPrivilegeEscalation",
                "spec.variants[1].podTemplate.spec.containers[1].securityContext.capabilities.drop",
            ],
            "{errors:#?}"
        );
        assert!(errors[0].message.contains("container \"proxy\" must set"));
        // The pod-level defaults (non-root, seccomp) cover the sidecar; at baseline an
        // unhardened sidecar is fine.
        assert!(refused(&v, Level::Baseline).is_empty());
    }
}
