//! Prints (YAML) the largest finished status of a matrix at the schema's limit: 64 cells of the
//! longest names, 9 streams (the most 64 cells measured once may have, as the size model
//! admits), every figure and word at its longest (`resource::size::worst_status`). For
//! `bench/report-at-the-limit.sh`, which times `benchmatrix report` on it and weighs
//! report.html.

use benchmatrix::fixtures::{connections, endpoint, phase};
use benchmatrix::resource::size::{Moment, Shape, worst_status};
use benchmatrix::resource::{BenchmarkRun, Configuration};

fn main() {
    let (cells, streams) = (64, 9);
    let name = |e: usize| format!("e{e:02}-{}", "y".repeat(59));
    let load = || (0..streams).map(|e| connections(&name(e), 1));
    let mut run = BenchmarkRun::sample()
        .named(&"r".repeat(63))
        .with_endpoints((0..streams).map(|e| endpoint(&name(e), &format!("/e{e}"))))
        .with_phases([phase(&format!("p00-{}", "z".repeat(59)), "1s", load())]);
    for c in 0..cells {
        run =
            run.with_cell(Configuration::named(&format!("c{c:02}-{}", "x".repeat(36))).cpu("100m"));
    }
    let status = worst_status(&Shape::of(&run.spec), Moment::Finished);
    print!(
        "{}",
        serde_yaml::to_string(&status).expect("a status serializes")
    );
}
