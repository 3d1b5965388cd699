use super::*;
use crate::resource::BenchmarkRun;

fn pattern(text: &str) -> ImagePattern {
    text.parse()
        .unwrap_or_else(|e| panic!("{text} should parse: {e}"))
}

fn policy(patterns: &[&str]) -> ImagePolicy {
    ImagePolicy::new(patterns.iter().map(|p| pattern(p)).collect())
}

#[test]
fn a_star_matches_within_one_path_segment_and_a_double_star_across_them() {
    let one = pattern("ghcr.io/acme/*");
    assert!(one.matches("ghcr.io/acme/app:1"));
    assert!(one.matches("ghcr.io/acme/app@sha256:0123"));
    assert!(!one.matches("ghcr.io/acme/team/app:1"), "* stops at /");
    assert!(!one.matches("ghcr.io/acmeevil/app:1"));
    assert!(!one.matches("ghcr.io/other/app:1"));
    let deep = pattern("ghcr.io/acme/**");
    assert!(deep.matches("ghcr.io/acme/team/app:1"));
    assert!(deep.matches("ghcr.io/acme/app:1"));
    assert!(!deep.matches("ghcr.io/acm/app:1"));
}

#[test]
fn stars_inside_a_segment_and_in_the_tag() {
    let p = pattern("registry.local:5000/bench-*:*");
    assert!(p.matches("registry.local:5000/bench-target:0.1.0"));
    assert!(p.matches("registry.local:5000/bench-:x"), "* may be empty");
    assert!(
        !p.matches("registry.local:5000/bench-target"),
        "a tag is required"
    );
    assert!(!p.matches("registry.local:5000/other:1"));
    assert!(!p.matches("registry.local:5000/bench-a/b:1"));
    assert!(!p.matches("registry.local:5001/bench-target:1"));
    // A host wildcard cannot reach into the path: evil.io/x.acme.com/... is not *.acme.com.
    let host = pattern("*.acme.com/**");
    assert!(host.matches("registry.acme.com/team/app:1"));
    assert!(!host.matches("evil.io/x.acme.com/app:1"));
}

#[test]
fn everything_but_stars_is_literal() {
    let p = pattern("ghcr.io/acme/app:1.2");
    assert!(p.matches("ghcr.io/acme/app:1.2"));
    assert!(!p.matches("ghcr.io/acme/app:1x2"), ". is not a wildcard");
    assert!(
        !p.matches("ghcr.io/acme/app:1.2.3"),
        "the whole reference must match"
    );
    assert!(!p.matches("xghcr.io/acme/app:1.2"));
}

#[test]
fn many_stars_match_quickly() {
    let p = pattern(&format!("ghcr.io/{}b", "*a".repeat(40)));
    let long = format!("ghcr.io/{}", "a".repeat(4000));
    let started = std::time::Instant::now();
    assert!(!p.matches(&long));
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

/// Whether `policy` allows `image`, which must parse.
fn allows(policy: &ImagePolicy, image: &str) -> bool {
    let parsed = image
        .parse()
        .unwrap_or_else(|e| panic!("{image} should parse: {e}"));
    policy.allows(&parsed)
}

#[test]
fn references_are_matched_in_the_form_the_kubelet_pulls() {
    let hub = policy(&["docker.io/library/nginx:*"]);
    assert!(allows(&hub, "nginx:1.27"));
    assert!(allows(&hub, "index.docker.io/nginx:1.27"));
    assert!(!allows(&hub, "acme/nginx:1.27"));
    // A short name is a Docker Hub image, whatever a pattern for another registry says.
    let ghcr = policy(&["ghcr.io/acme/*"]);
    assert!(!allows(&ghcr, "acme/app:1"));
    assert!(
        allows(&ghcr, "ghcr.io/acme/app"),
        "as ghcr.io/acme/app:latest"
    );
}

#[test]
fn a_reference_that_does_not_parse_never_matches_a_pattern_it_spells_out() {
    // The case seen on a cluster: the string matches the pattern, the kubelet refuses it.
    let p = policy(&["ghcr.io/benchmatrix/**"]);
    let escape = "ghcr.io/benchmatrix/../evil/x:1";
    assert!(pattern("ghcr.io/benchmatrix/**").matches(escape));
    let uses = [ImageUse::named_or_default(
        "spec.target.image",
        Some(escape),
        "unused",
        "--target-image",
    )];
    let refusal = p.refusal(&uses).expect("refused");
    assert_eq!(refusal.reason, INVALID_IMAGE_REFERENCE);
    assert!(
        refusal.message.starts_with(
            r#"invalid image reference: spec.target.image "ghcr.io/benchmatrix/../evil/x:1": path component ".." is not a valid name component"#
        ),
        "{}",
        refusal.message
    );
    assert!(allows(&p, "ghcr.io/benchmatrix/x:1"));
}

#[test]
fn patterns_that_cannot_match_are_refused_with_the_form_to_write() {
    let err = "nginx:*".parse::<ImagePattern>().unwrap_err().to_string();
    assert!(err.contains("names no registry"), "{err}");
    assert!(err.contains("docker.io/library/nginx:*"), "{err}");
    let err = "acme/*".parse::<ImagePattern>().unwrap_err().to_string();
    assert!(err.contains(r#"write e.g. "docker.io/acme/*""#), "{err}");
    assert!("".parse::<ImagePattern>().is_err());
    assert!("ghcr.io/a b".parse::<ImagePattern>().is_err());
    for fine in [
        "**",
        "*/acme/*",
        "localhost/*",
        "registry:5000/x",
        "ghcr.io/**",
    ] {
        assert!(fine.parse::<ImagePattern>().is_ok(), "{fine}");
    }
    assert!(pattern("**").matches("docker.io/library/nginx:latest"));
}

#[test]
fn an_empty_policy_allows_every_image_that_parses() {
    let open = ImagePolicy::default();
    assert!(open.allows_all());
    assert!(allows(&open, "anything/at:all"));
    let uses = |image: &str| {
        [ImageUse::named_or_default(
            "spec.loadgen.image",
            Some(image),
            "unused",
            "--loadgen-image",
        )]
    };
    assert_eq!(open.refusal(&uses("anything/at:all")), None);
    let refusal = open.refusal(&uses("Anything/At:all")).expect("refused");
    assert_eq!(refusal.reason, INVALID_IMAGE_REFERENCE);
    assert!(
        refusal.message.contains(
            r#"spec.loadgen.image "Anything/At:all": path component "At" has an uppercase letter"#
        ),
        "{}",
        refusal.message
    );
}

/// A run that names these images, or leaves them to the operator's defaults.
fn run(target: Option<&str>, loadgen: Option<&str>) -> BenchmarkRun {
    let mut run = BenchmarkRun::sample().with_cell(crate::resource::Configuration::named("a"));
    run.spec.target.image = target.map(Into::into);
    run.spec.loadgen.image = loadgen.map(Into::into);
    run
}

/// The refusal for `run` under `policy`, with these operator defaults.
fn refusal(
    policy: &ImagePolicy,
    run: &BenchmarkRun,
    (target, loadgen): (&str, &str),
) -> Option<Refusal> {
    policy.refusal(&image_uses(&run.spec, target, loadgen))
}

#[test]
fn a_run_uses_its_own_images_or_the_defaults() {
    let uses = image_uses(&run(Some("ghcr.io/acme/app:2"), None).spec, "t", "lg");
    assert_eq!(
        uses,
        [
            ImageUse {
                field: "spec.target.image".into(),
                image: "ghcr.io/acme/app:2".into(),
                default_flag: None,
            },
            ImageUse {
                field: "spec.loadgen.image".into(),
                image: "lg".into(),
                default_flag: Some("--loadgen-image"),
            },
        ]
    );
}

#[test]
fn the_refusal_names_each_refused_image_and_the_patterns() {
    let p = policy(&["ghcr.io/acme/*", "registry.local:5000/bench-*:*"]);
    let defaults = ("ghcr.io/benchmatrix/t:1", "ghcr.io/acme/loadgen:1");
    assert_eq!(
        refusal(&p, &run(Some("ghcr.io/acme/app:2"), None), defaults),
        None
    );
    let refused = refusal(&p, &run(Some("evil/miner"), None), defaults).expect("refused");
    assert_eq!(refused.reason, IMAGE_NOT_ALLOWED);
    let msg = refused.message;
    assert!(
        msg.contains(r#"spec.target.image "evil/miner" (in full "docker.io/evil/miner:latest")"#),
        "{msg}"
    );
    assert!(
        msg.contains("ghcr.io/acme/*, registry.local:5000/bench-*:*"),
        "{msg}"
    );
    assert!(
        !msg.contains("loadgen"),
        "the load generator image is allowed: {msg}"
    );
    // The operator's defaults are checked too, and the message says where they come from.
    let msg = refusal(
        &p,
        &run(Some("ghcr.io/acme/app:2"), Some("nope.io/lg:1")),
        ("x", "y"),
    )
    .expect("refused")
    .message;
    assert!(
        msg.contains(r#"spec.loadgen.image "nope.io/lg:1""#),
        "{msg}"
    );
    let msg = refusal(&p, &run(None, None), defaults)
        .expect("refused")
        .message;
    assert!(
        msg.contains(r#"the default image for spec.target.image "ghcr.io/benchmatrix/t:1""#)
            && msg.contains("--target-image"),
        "{msg}"
    );
    assert_eq!(
        refusal(
            &ImagePolicy::default(),
            &run(Some("evil/miner"), None),
            ("a", "b")
        ),
        None
    );
}

#[test]
fn an_invalid_reference_is_refused_first_and_the_others_are_named_too() {
    let p = policy(&["ghcr.io/acme/*"]);
    let refused = refusal(
        &p,
        &run(Some("ghcr.io/acme//app"), Some("evil.io/lg:1")),
        ("unused", "unused"),
    )
    .expect("refused");
    assert_eq!(refused.reason, INVALID_IMAGE_REFERENCE);
    assert_eq!(
        refused.message,
        "invalid image reference: spec.target.image \"ghcr.io/acme//app\": has an empty \
         path component (a doubled \"/\", or one at an end); and image not allowed: \
         spec.loadgen.image \"evil.io/lg:1\" matches none of the images this operator may \
         run (--allowed-images): ghcr.io/acme/*"
    );
    // A broken default names its flag.
    let refused = refusal(
        &p,
        &run(None, None),
        ("ghcr.io/acme/t:", "ghcr.io/acme/lg:1"),
    )
    .expect("refused");
    assert!(
        refused.message.contains(
            r#"the default image for spec.target.image "ghcr.io/acme/t:" (the operator's --target-image): tag """#
        ),
        "{}",
        refused.message
    );
}

#[test]
fn every_container_and_init_container_of_a_pod_template_is_checked() {
    let mut r = run(None, Some("ghcr.io/acme/lg:1"));
    r.spec.target.pod_template = Some(crate::resource::pod_template::PodTemplate(
        serde_json::json!({"spec": {
            "initContainers": [{"name": "init", "image": "evil.io/init:1"}],
            "containers": [
                {"name": "target", "image": "ghcr.io/acme/app:1"},
                {"name": "sidecar", "image": "evil.io/proxy:1"}
            ]
        }}),
    ));
    let fields: Vec<String> = image_uses(&r.spec, "ghcr.io/acme/t:1", "ghcr.io/acme/lg:1")
        .into_iter()
        .map(|u| u.field)
        .collect();
    assert_eq!(
        fields,
        [
            "spec.target.podTemplate.spec.containers[0].image",
            "spec.target.podTemplate.spec.containers[1].image",
            "spec.target.podTemplate.spec.initContainers[0].image",
            "spec.loadgen.image",
        ],
        "the template's target names its image, so spec.target.image is not checked"
    );
    let p = policy(&["ghcr.io/acme/*"]);
    let refusal = p
        .refusal(&image_uses(
            &r.spec,
            "ghcr.io/acme/t:1",
            "ghcr.io/acme/lg:1",
        ))
        .expect("refused");
    assert!(
        refusal.message.contains("containers[1].image"),
        "{}",
        refusal.message
    );
    assert!(
        refusal.message.contains("initContainers[0].image"),
        "{}",
        refusal.message
    );
    assert!(
        !refusal.message.contains("containers[0].image"),
        "{}",
        refusal.message
    );
}
