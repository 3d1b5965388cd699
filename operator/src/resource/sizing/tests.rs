use super::*;
use crate::resource::EnvVar;

fn sizing(yaml: &str) -> SizingSpec {
    serde_yaml::from_str(yaml).unwrap()
}

#[test]
fn the_space_expands_family_by_family_with_names_that_say_each_axis() {
    let s = sizing(
        "traffic: 300\nsearch: {replicas: [1, 2], cpu: [500m, 1], mode: [single, pool], env: \
         {WORKERS: ['1', '4']}}",
    );
    assert_eq!(s.check(), Vec::new());
    assert_eq!(s.margin, Percent(20.0));
    assert_eq!((s.budget, s.confirmations, s.rule_out), (12, 3, 2));
    assert_eq!(s.target_rate(), 360.0);
    assert_eq!(s.families(), 4);
    let cells = crate::resource::matrix::sizing_cells(&s);
    assert_eq!(cells.len(), 16);
    let names: Vec<&str> = cells.iter().take(5).map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "single-x1-cpu500m-workers1",
            "single-x1-cpu1-workers1",
            "single-x2-cpu500m-workers1",
            "single-x2-cpu1-workers1",
            "single-x1-cpu500m-workers4",
        ]
    );
    assert_eq!(cells[4].env, vec![EnvVar::new("WORKERS", "4")]);
    assert_eq!(cells[15].name, "pool-x2-cpu1-workers4");
    assert_eq!(cells[15].reserved_cpu(), Some(2.0));
}

#[test]
fn bad_input_is_refused_with_its_field_path() {
    let s = sizing(
        "traffic: 0\nmargin: 300%\nbudget: 1\nconfirmations: 9\nruleOut: 7\nsearch: {replicas: \
         [], cpu: [1, 1], mode: [single, pool], env: {W: []}}",
    );
    let errors = s.check();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "spec.sizing.traffic",
            "spec.sizing.margin",
            "spec.sizing.search.replicas",
            "spec.sizing.search.env.W",
            "spec.sizing.search.cpu[1]",
            "spec.sizing.budget",
            "spec.sizing.confirmations",
            "spec.sizing.ruleOut",
        ],
        "{errors:#?}"
    );
    assert_eq!(
        errors[5].message,
        "1 is below what the search needs: 2, one search in each of the 2 combinations of mode \
         and env (their capacities bound the rest)"
    );
    let big = sizing(
        "traffic: 10\nsearch: {replicas: [1, 2, 3, 4, 5, 6, 7, 8], cpu: [250m, 500m, 1, 2], \
         mode: [single, pool, threads]}",
    );
    let errors = big.check();
    assert_eq!(errors[0].path, "spec.sizing.search");
    assert!(
        errors[0].message.contains("96 configurations"),
        "{errors:?}"
    );
}

/// Four env axes of 65,536 values make 2^64 configurations: counted without overflow (a count
/// that wrapped to 0 passed as a space within the limit, and its expansion ran out of memory),
/// refused as too large, and their values checked for repeats in one pass each.
#[test]
fn a_space_too_large_to_count_is_refused_not_expanded() {
    let mut s = sizing("traffic: 30\nsearch: {replicas: [1], cpu: [\"1\"]}");
    for axis in ["A", "B", "C", "D"] {
        let values = (0..65_536).map(|v| v.to_string()).collect();
        s.search.env.insert(axis.into(), values);
    }
    assert_eq!(s.families(), usize::MAX);
    assert_eq!(s.configuration_count(), usize::MAX);
    let started = std::time::Instant::now();
    let errors = s.check();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        ["spec.sizing.search", "spec.sizing.budget"],
        "{errors:?}"
    );
}
