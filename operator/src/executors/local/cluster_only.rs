//! What a local run cannot run: a target named only by what a cluster runs.
//!
//! Locally a cell's target is a program (`command`), or benchmatrix's own built-in target when
//! none is given. A spec that names the user's image (or a pod template) without a command
//! describes a service only a cluster can start; run here it would silently measure the
//! built-in target instead and answer a question nobody asked. So it is refused before
//! anything starts, naming both ways out.

use crate::resource::BenchmarkRunSpec;
use crate::resource::validate::FieldError;

/// The repository of the built-in target's published image: a spec that names it (any tag)
/// asks for the built-in target, which a local run has built in.
const BUILTIN_IMAGE_REPOSITORY: &str = "ghcr.io/benchmatrix/benchmatrix-target";

/// Why `spec` cannot run on this machine: one error per target (or variant) that names an
/// image or a pod template and no command to run locally. Empty when it can run here.
pub fn refusals(spec: &BenchmarkRunSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let target = &spec.target;
    // The target's own image and template, unless every variant brings its own command.
    let target_used =
        spec.variants.is_empty() || spec.variants.iter().any(|v| v.command.is_empty());
    if target.command.is_empty() && target_used {
        errors.extend(cluster_only(
            "spec.target",
            target.image.as_deref(),
            target.pod_template.is_some(),
        ));
    }
    for (i, v) in spec.variants.iter().enumerate() {
        // A variant's own image or template with the target's command (or none) would run
        // that command, not what the variant names.
        if v.command.is_empty() {
            let at = format!("spec.variants[{i}]");
            errors.extend(cluster_only(
                &at,
                v.image.as_deref(),
                v.pod_template.is_some(),
            ));
        }
    }
    errors
}

/// The refusal of the target (or variant) at `at` that names `image` and/or a pod template but
/// no command, or None when nothing in it needs a cluster.
fn cluster_only(at: &str, image: Option<&str>, templated: bool) -> Option<FieldError> {
    let user_image = image.filter(|i| !is_builtin_image(i));
    let (field, what) = match (user_image, templated) {
        (Some(image), _) => ("image", format!("names the image {image:?}")),
        (None, true) => ("podTemplate", "sets a pod template".to_owned()),
        (None, false) => return None,
    };
    Some(FieldError::new(
        format!("{at}.{field}"),
        format!(
            "{what} but no {at}.command: a local run starts programs, not images or pods, and \
             would measure benchmatrix's built-in target instead. Give {at}.command (the argv \
             that starts your service on this machine), or run the file on a cluster with \
             `kubectl benchmatrix run FILE`"
        ),
    ))
}

/// True for the built-in target's published image, whatever its tag or digest.
fn is_builtin_image(image: &str) -> bool {
    image
        .strip_prefix(BUILTIN_IMAGE_REPOSITORY)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(':') || rest.starts_with('@'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ValidatedRun;

    fn spec(target: &str, variants: &str) -> BenchmarkRunSpec {
        let yaml = format!(
            "apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {{name: r}}\n\
             spec:\n  target: {target}\n{variants}  configurations: [{{name: one, cpu: 500m}}]\n  \
             workload:\n    endpoints: [{{name: e, path: /}}]\n    \
             phases: [{{name: p, duration: 5s, load: [{{endpoint: e, connections: 1}}]}}]\n"
        );
        ValidatedRun::parse(&yaml).unwrap().spec().clone()
    }

    fn paths(spec: &BenchmarkRunSpec) -> Vec<String> {
        refusals(spec).into_iter().map(|e| e.path).collect()
    }

    /// The built-in target stays runnable: no image, or its own published image.
    #[test]
    fn the_built_in_target_runs_here() {
        assert!(paths(&spec("{port: 8080}", "")).is_empty());
        let builtin = format!("{{image: {}}}", crate::resource::spec::DEFAULT_TARGET_IMAGE);
        assert!(paths(&spec(&builtin, "")).is_empty());
        assert!(paths(&spec("{image: ghcr.io/benchmatrix/benchmatrix-target}", "")).is_empty());
        // A command runs here whatever image the cluster would use.
        assert!(paths(&spec("{image: app:1, command: [./app]}", "")).is_empty());
    }

    #[test]
    fn an_image_or_a_pod_template_without_a_command_is_refused_with_both_ways_out() {
        let refused = refusals(&spec("{image: app:1}", ""));
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].path, "spec.target.image");
        let message = &refused[0].message;
        assert!(message.contains("\"app:1\""), "{message}");
        assert!(message.contains("Give spec.target.command"), "{message}");
        assert!(message.contains("kubectl benchmatrix run"), "{message}");
        assert_eq!(
            paths(&spec("{podTemplate: {metadata: {labels: {a: b}}}}", "")),
            ["spec.target.podTemplate"]
        );
        assert!(
            paths(&spec(
                "{image: ghcr.io/benchmatrix/benchmatrix-target-fork:1}",
                ""
            ))
            .len()
                == 1
        );
    }

    /// `--base IMAGE --candidate IMAGE` writes variants with images only: a cluster's run.
    #[test]
    fn a_variant_with_its_own_image_needs_its_own_command() {
        let variants =
            "  variants: [{name: base, image: app:1}, {name: candidate, image: app:2}]\n";
        assert_eq!(
            paths(&spec("{command: [./app]}", variants)),
            ["spec.variants[0].image", "spec.variants[1].image"]
        );
        let commands = "  variants: [{name: base, image: app:1, command: [./a]}, \
                        {name: candidate, image: app:2, command: [./b]}]\n";
        // Every variant brings a command: the target's image is never started here.
        assert!(paths(&spec("{image: app:0}", commands)).is_empty());
    }

    /// Every sample keeps doing what it did: the cluster's Express sample is refused here, the
    /// local ones run.
    #[test]
    fn samples_meant_for_a_cluster_are_refused_here_and_the_others_run() {
        let refused = |text: &str| !refusals(ValidatedRun::parse(text).unwrap().spec()).is_empty();
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for (file, cluster_only) in [
            ("manifests/samples/node-express.yaml", true),
            ("bench/node-express-half.yaml", true),
            ("bench/cluster-slow-start.yaml", true),
            ("manifests/samples/node-express-local.yaml", false),
            ("manifests/samples/quickstart.yaml", false),
            ("manifests/samples/sizing.yaml", false),
            ("bench/paired-gate.yaml", false),
            ("examples/own-service/benchmarkrun.yaml", false),
        ] {
            let text = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
            assert_eq!(refused(&text), cluster_only, "{file}");
        }
    }
}
