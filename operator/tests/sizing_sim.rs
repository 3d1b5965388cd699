//! The sizing search against the full grid, simulated: 48 configurations (replicas 1-8 x CPU
//! 250m-2 x single/pool) of a service whose capacity per configuration is a known model, with
//! 5% noise on every measurement and one configuration that breaks monotonicity. The engine's
//! own sizing search decides what to measure (`benchmatrix::fixtures::sim_sizing`); the grid's
//! answer is the cheapest configuration whose true capacity holds the target. Ten seeds, each
//! with its own traffic. `cargo test -p benchmatrix --test sizing_sim -- --nocapture` prints
//! the table BENCHMARKS.md quotes.

use benchmatrix::fixtures::sim_sizing::{grid_answer, measured_grid_answer, simulate};
use benchmatrix::resource::capacity::CapacitySpec;
use benchmatrix::resource::matrix::Cell;
use benchmatrix::resource::sizing::{SizingOutcome, SizingSpec};

const SPACE: &str = "search: {replicas: [1, 2, 3, 4, 6, 8], cpu: [250m, 500m, 1, 2], mode: \
                     [single, pool]}";

/// The service: one event loop uses at most one core, and less than a core well (single);
/// a worker pool uses every core it gets, less its hand-off cost, and thrashes on a quarter
/// core (pool). Replicas share a database: Amdahl's law with 3% contention. single-x2-cpu2 is
/// the exception: at 2 CPU its runtime's heap sizing makes it slower than at 1 CPU (the
/// configuration that breaks monotonicity).
fn capacity(c: &Cell) -> f64 {
    let cpu = c.cpu.cpu_cores().unwrap();
    let per = match c.mode.to_string().as_str() {
        "single" => 120.0 * cpu.min(1.0) * if cpu < 1.0 { 0.85 } else { 1.0 },
        _ if cpu < 0.5 => 70.0 * cpu,
        _ => 105.0 * cpu,
    };
    let n = f64::from(c.replicas);
    let scaled = per * n / (1.0 + 0.03 * (n - 1.0));
    if c.name == "single-x2-cpu2" {
        scaled * 0.7
    } else {
        scaled
    }
}

fn spec(traffic: f64) -> SizingSpec {
    serde_yaml::from_str(&format!("traffic: {traffic}\nbudget: 12\n{SPACE}")).unwrap()
}

fn capacity_spec() -> CapacitySpec {
    serde_yaml::from_str("slo: [{errorRate: {below: 0.01}}]\nresolution: 10%\nmaxRate: 5000")
        .unwrap()
}

/// The spread of one measurement between runs: 5%, the spread `NOISE` in the engine's bounds
/// allows for twice over.
const SPREAD: f64 = 0.05;

#[test]
fn the_search_finds_the_grids_answer_in_nine_seeds_of_ten_measuring_a_quarter_at_most() {
    let mut found = 0;
    let mut misses = Vec::new();
    println!(
        "seed  traffic  true answer        grid measured      search answer      searches  \
         checks  touched  rounds"
    );
    for seed in 1..=10u64 {
        let traffic = 60.0 + 45.0 * seed as f64;
        let spec = spec(traffic);
        assert_eq!(benchmatrix::resource::matrix::sizing_cells(&spec).len(), 48);
        let cells = benchmatrix::resource::matrix::sizing_cells(&spec);
        let truth = |name: &str| cells.iter().find(|c| c.name == name).map(capacity);
        let cost = |name: &str| {
            cells
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| c.reserved_cpu())
        };
        let exact = grid_answer(&spec, &capacity).expect("the grid holds every seed's traffic");
        let grid = measured_grid_answer(&spec, &capacity_spec(), &capacity, (seed, SPREAD))
            .unwrap_or_else(|| "-".into());
        let s = simulate(&spec, &capacity_spec(), &capacity, (seed, SPREAD), 2);
        let got = s
            .sizing
            .chosen
            .as_ref()
            .map_or("-".to_owned(), |c| c.configuration.clone());
        println!(
            "{seed:>4}  {traffic:>7}  {exact:<17}  {grid:<17}  {got:<17}  {:>8}  {:>6}  {:>7}  \
             {:>6}",
            s.searches, s.checks, s.touched, s.rounds
        );
        assert!(s.searches <= 12, "seed {seed}: {} searches", s.searches);
        assert!(s.sizing.outcome.is_final(), "{:#?}", s.sizing);
        if s.sizing.chosen.is_some() {
            assert_eq!(s.sizing.outcome, SizingOutcome::Chosen);
        }
        // The answer is the least reserved CPU: a configuration of the same cost is as good.
        if cost(&got) == cost(&grid) {
            found += 1;
        } else {
            misses.push(format!(
                "seed {seed}: target {} rps; the measured grid chose {grid} (true {:.1?} rps), \
                 the search {got} (true {:.1?} rps): {}",
                spec.target_rate(),
                truth(&grid),
                truth(&got),
                s.sizing.message
            ));
        }
    }
    for m in &misses {
        println!("miss: {m}");
    }
    assert!(
        found >= 9,
        "found the grid's answer in {found} of 10 seeds: {misses:#?}"
    );
}

/// The same over 200 seeds (traffic 105 to 510 rps in turn), as counts:
/// `cargo test -p benchmatrix --test sizing_sim -- --ignored --nocapture`.
#[test]
#[ignore]
fn two_hundred_seeds() {
    let (mut same_as_grid, mut same_as_truth, mut chosen, mut searches, mut touched) =
        (0, 0, 0, Vec::new(), Vec::new());
    for seed in 1..=200u64 {
        let traffic = 60.0 + 45.0 * ((seed - 1) % 10 + 1) as f64;
        let spec = spec(traffic);
        let cells = benchmatrix::resource::matrix::sizing_cells(&spec);
        let cost = |name: &str| {
            cells
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| c.reserved_cpu())
        };
        let exact = grid_answer(&spec, &capacity).unwrap();
        let grid = measured_grid_answer(&spec, &capacity_spec(), &capacity, (seed, SPREAD))
            .unwrap_or_default();
        let s = simulate(&spec, &capacity_spec(), &capacity, (seed, SPREAD), 2);
        let got = s
            .sizing
            .chosen
            .as_ref()
            .map_or(String::new(), |c| c.configuration.clone());
        chosen += u32::from(!got.is_empty());
        same_as_grid += u32::from(cost(&got) == cost(&grid));
        same_as_truth += u32::from(cost(&got) == cost(&exact));
        searches.push(s.searches);
        touched.push(s.touched);
    }
    searches.sort_unstable();
    touched.sort_unstable();
    println!(
        "200 seeds: an answer in {chosen}; the measured grid's in {same_as_grid}, the true one \
         in {same_as_truth}; searches median {} max {}; configurations touched median {} max {}",
        searches[100], searches[199], touched[100], touched[199]
    );
}

/// A configuration whose target never comes up measures nothing: it is tried once and the
/// search goes on without it. Here every one fails so, each tried once, the run ends, where a
/// failed seed used to be searched again after every failure, deploying forever.
#[test]
fn a_configuration_that_never_comes_up_is_tried_once_and_the_search_ends() {
    use benchmatrix::engine::machine::Command;
    use benchmatrix::fixtures::sim_cluster::{SimCluster, nodes};
    use benchmatrix::resource::BenchmarkRun;
    let run: BenchmarkRun = serde_yaml::from_str(
        r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: sizing, namespace: ns, uid: u1, generation: 1}
spec:
  workload:
    endpoints: [{name: fast, path: /fast}]
  timeouts: {ready: 5s}
  capacity:
    slo: [{endpoint: fast, p50: {below: 500ms}}]
    startRate: 20
    probeDuration: 1s
  sizing:
    traffic: 20
    search: {replicas: [1, 2], cpu: ["500m", "1"]}
"#,
    )
    .unwrap();
    // Ready after an hour: every target fails its 5 s ready timeout.
    let mut sim = SimCluster::new(nodes(1, "4"), 3600, 1);
    let ended = sim
        .run_to_end(run, 200)
        .and_then(|r| r.status)
        .expect("the run ends");
    let deploys = sim
        .commands
        .iter()
        .filter(|c| matches!(c, Command::Deploy(_)))
        .count();
    assert_eq!(deploys, 4, "each configuration once");
    for c in &ended.cells {
        assert_eq!(c.reason.as_deref(), Some("NeverReady"), "{}", c.name);
    }
}
