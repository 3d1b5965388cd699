//! The upstream corpus judged pod by pod, as Pod Security admission judges it: every `fail`
//! fixture refused naming the check its file name says, every `pass` fixture admitted.
//!
//! ```text
//! PSA_TESTDATA=/path/to/pod-security-admission/test/testdata \
//!   cargo nextest run -p benchmatrix-pod-security --run-ignored only --no-capture -E 'test(/corpus/)'
//! ```

use std::path::PathBuf;

use benchmatrix_pod_security::corpus::fixtures;
use benchmatrix_pod_security::{Level, check};

#[test]
#[ignore = "needs a copy of pod-security-admission's test/testdata in PSA_TESTDATA"]
fn the_upstream_corpus_is_judged_as_pod_security_admission_judges_it() {
    let root = PathBuf::from(
        std::env::var("PSA_TESTDATA").expect("PSA_TESTDATA: the testdata folder to read"),
    );
    let mut problems = Vec::new();
    for level in [Level::Baseline, Level::Restricted] {
        let (dir, all, not_pods) = fixtures(&root, level);
        let (mut refused, mut with_others, mut admitted) = (0, 0, 0);
        for f in &all {
            let ids: Vec<&str> = check(level, Some(&f.meta), &f.spec)
                .iter()
                .map(|v| v.check)
                .collect();
            match (f.outcome, f.want) {
                ("fail", Some(want)) if ids.contains(&want) => {
                    refused += 1;
                    with_others += usize::from(ids.len() > 1);
                }
                ("fail", want) => problems.push(format!(
                    "{level}: fail/{}: want {want:?}, got {ids:?}",
                    f.file
                )),
                (_, _) if ids.is_empty() => admitted += 1,
                _ => problems.push(format!("{level}: pass/{}: refused by {ids:?}", f.file)),
            }
        }
        let fails = all.iter().filter(|f| f.outcome == "fail").count();
        let passes = all.len() - fails;
        println!(
            "{level} ({}): fail refused naming the check {refused}/{fails} ({with_others} also \
             name other checks); pass admitted {admitted}/{passes}; not pod-bearing {not_pods}",
            dir.display(),
        );
        assert!(
            fails > 0 && passes > 0,
            "{level}: no fixtures in {}",
            dir.display()
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
