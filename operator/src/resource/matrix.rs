//! The matrix as a list of cells, and the deterministic names of each cell's child objects.
//!
//! Pure: the operator and the local runner expand a spec the same way, and the operator finds
//! a cell's Deployment, Service and Job again after a restart by recomputing their names.

use std::collections::BTreeMap;

use crate::resource::sizing::SizingSpec;
use crate::resource::{Axes, BenchmarkRunSpec, EnvVar, Mode, PoolSize, Quantity, Variant};

/// Longest child object name. Job pods are named `<job>-<5 chars>` and Jobs label their pods
/// with their own name (a 63-character label value), so 52 leaves room everywhere.
pub const MAX_CHILD_NAME: usize = 52;

/// Longest cell name (it shows up in child names, labels and reports).
pub const MAX_CELL_NAME: usize = 40;

pub use benchmatrix_loadgen::limits::MAX_CELLS;

/// One configuration of the matrix, with the spec's defaults and the target's shared env
/// resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Position in the matrix (0-based); `status.cells[index]` describes it.
    pub index: usize,
    /// The cell's name: its configuration's, or `<configuration>-<variant>` with variants.
    pub name: String,
    /// The name of the configuration it measures.
    pub configuration: String,
    /// The variant of the target it measures (with `spec.variants`).
    pub variant: Option<Variant>,
    /// Concurrency mode (env BENCH_MODE).
    pub mode: Mode,
    /// Replica count.
    pub replicas: u32,
    /// CPU per replica.
    pub cpu: Quantity,
    /// Memory per replica.
    pub memory: Quantity,
    /// Worker pool size (env BENCH_POOL_SIZE).
    pub pool_size: PoolSize,
    /// Environment for the target: `spec.target.env`, then the cell's own, then its variant's
    /// (a later value wins for the same name).
    pub env: Vec<EnvVar>,
}

impl Cell {
    /// The CPU the cell reserves, in cores: its CPU limit per replica times its replicas
    /// (requests equal limits). This is what a cluster schedules and bills, and what the
    /// recommendation ranks by; None when the CPU quantity does not parse (validation refuses
    /// such a spec before it runs).
    pub fn reserved_cpu(&self) -> Option<f64> {
        let millis = self.cpu.cpu_millis().ok()?;
        Some((millis * u64::from(self.replicas)) as f64 / 1000.0)
    }
}

/// The cells of a spec, in order: `configurations`, then the `axes` cross product, then the
/// configurations of a `sizing` space.
pub fn cells(spec: &BenchmarkRunSpec) -> Vec<Cell> {
    let mut out: Vec<Cell> = spec
        .configurations
        .iter()
        .map(|c| Cell {
            index: 0,
            name: c.name.clone(),
            configuration: c.name.clone(),
            variant: None,
            mode: c.mode,
            replicas: c.replicas,
            cpu: c.cpu.clone(),
            memory: c.memory.clone(),
            pool_size: c.pool_size,
            env: c.env.clone(),
        })
        .collect();
    if let Some(axes) = &spec.axes {
        out.extend(axes_cells(axes));
    }
    if let Some(sizing) = &spec.sizing {
        out.extend(sizing_cells(sizing));
    }
    for cell in &mut out {
        cell.env = merge_env(&spec.target.env, &cell.env);
    }
    if !spec.variants.is_empty() {
        out = crossed_with_variants(out, &spec.variants);
    }
    for (i, cell) in out.iter_mut().enumerate() {
        cell.index = i;
    }
    out
}

/// Every configuration's cell once per variant, variants together: `a-base, a-candidate,
/// b-base, ...`, so a configuration's variants are neighbours in the matrix as in the rounds.
fn crossed_with_variants(configurations: Vec<Cell>, variants: &[Variant]) -> Vec<Cell> {
    configurations
        .into_iter()
        .flat_map(|c| {
            variants.iter().map(move |v| Cell {
                name: format!("{}-{}", c.configuration, v.name),
                env: merge_env(&c.env, &v.env),
                variant: Some(v.clone()),
                ..c.clone()
            })
        })
        .collect()
}

/// The cross product modes x replicas x cpu of an axes block, named `<mode>-x<replicas>` plus
/// `-cpu<cpu>` when more than one CPU value is tried (a shared `totalCpu` keeps the short name).
pub fn axes_cells(axes: &Axes) -> Vec<Cell> {
    let mut out = Vec::new();
    for mode in &axes.modes {
        for &replicas in &axes.replicas {
            let cpus: Vec<(Quantity, Option<String>)> = match &axes.total_cpu {
                Some(total) => vec![(split_cpu(total, replicas), None)],
                None => axes
                    .cpu
                    .iter()
                    .map(|q| {
                        let suffix = (axes.cpu.len() > 1).then(|| cpu_label(q));
                        (q.clone(), suffix)
                    })
                    .collect(),
            };
            for (cpu, suffix) in cpus {
                let mut name = format!("{mode}-x{replicas}");
                if let Some(suffix) = suffix {
                    name.push_str("-cpu");
                    name.push_str(&suffix);
                }
                out.push(Cell {
                    index: 0,
                    configuration: name.clone(),
                    name,
                    variant: None,
                    mode: *mode,
                    replicas,
                    cpu,
                    memory: axes.memory.clone(),
                    pool_size: axes.pool_size,
                    env: axes.env.clone(),
                });
            }
        }
    }
    out
}

/// `total / replicas` (`"2"` over 2 replicas -> `"1"`, over 3 -> `"666m"`; rounding down keeps
/// the cell within the budget).
fn split_cpu(total: &Quantity, replicas: u32) -> Quantity {
    match total.cpu_millis() {
        Ok(millis) if replicas > 0 => {
            let each = millis / u64::from(replicas);
            if each % 1000 == 0 {
                Quantity(format!("{}", each / 1000))
            } else {
                Quantity(format!("{each}m"))
            }
        }
        _ => total.clone(),
    }
}

/// A CPU quantity as a name fragment: `"500m"` -> `500m`, `"1.5"` -> `1500m`, `"2"` -> `2`.
pub fn cpu_label(q: &Quantity) -> String {
    match q.cpu_millis() {
        Ok(m) if m % 1000 == 0 => (m / 1000).to_string(),
        Ok(m) => format!("{m}m"),
        Err(_) => sanitize(q.as_str()),
    }
}

/// Target env then cell env; a later entry replaces an earlier one of the same name.
pub fn merge_env(shared: &[EnvVar], own: &[EnvVar]) -> Vec<EnvVar> {
    let mut out: Vec<EnvVar> = Vec::new();
    for var in shared.iter().chain(own) {
        match out.iter_mut().find(|v| v.name == var.name) {
            Some(existing) => existing.value = var.value.clone(),
            None => out.push(var.clone()),
        }
    }
    out
}

/// Checks a cell name: a DNS label of at most [`MAX_CELL_NAME`] characters.
pub fn check_cell_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > MAX_CELL_NAME {
        return Err(format!(
            "{name:?} is {} characters long; at most {MAX_CELL_NAME} are allowed",
            name.len()
        ));
    }
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !ok_chars || name.starts_with('-') || name.ends_with('-') {
        return Err(format!(
            "{name:?} is not a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit)"
        ));
    }
    Ok(())
}

/// The name shared by a cell's Deployment, Service, ConfigMap and Job.
///
/// `<run>-<cell>-<hash>`, lower-cased, shortened to [`MAX_CHILD_NAME`], starting with a letter
/// (Service names are DNS-1035 labels). The hash covers the run's name, its UID where known
/// (so a re-created run with the same name never adopts the old run's objects while they are
/// being deleted) and the cell name, so two cells whose shortened names collide still differ.
pub fn child_name(run_name: &str, run_uid: Option<&str>, cell: &str) -> String {
    let hash = fnv1a(&[run_name, run_uid.unwrap_or(""), cell]);
    let suffix = format!("{:08x}", hash as u32);
    let mut base = sanitize(&format!("{run_name}-{cell}"));
    if !base.starts_with(|c: char| c.is_ascii_lowercase()) {
        base.insert(0, 'b');
    }
    let room = MAX_CHILD_NAME - suffix.len() - 1;
    base.truncate(room);
    let base = base.trim_end_matches('-');
    format!("{base}-{suffix}")
}

/// The child name of one repetition of a cell: [`child_name`] for the first, and a name of its
/// own for each later one (`<cell>-r<N>` hashed in), so a repetition never meets the objects of
/// the one before it while those are still being deleted.
pub fn repetition_child_name(
    run_name: &str,
    run_uid: Option<&str>,
    cell: &str,
    repetition: u32,
) -> String {
    if repetition <= 1 {
        child_name(run_name, run_uid, cell)
    } else {
        child_name(run_name, run_uid, &format!("{cell}-r{repetition}"))
    }
}

/// Lower-cases and replaces anything outside `[a-z0-9-]` with '-', collapsing repeats.
fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_matches('-').to_owned()
}

/// FNV-1a over the parts, separated so ("ab","c") and ("a","bc") differ. A stable hash (unlike
/// std's `DefaultHasher`, which may change between releases) keeps names stable across
/// operator versions.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hash ^= 0xff;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        for b in part.bytes() {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// The configurations of sizing's search space, family by family (mode, then env values in name order), then
/// replicas, then CPU; `family` of each is its index among `SizingSpec::families`.
pub fn sizing_cells(sizing: &SizingSpec) -> Vec<Cell> {
    let s = &sizing.search;
    let mut out = Vec::new();
    for mode in &s.mode {
        for env in env_combinations(&s.env) {
            for &replicas in &s.replicas {
                for cpu in &s.cpu {
                    let mut name = format!("{mode}-x{replicas}-cpu{}", cpu_label(cpu));
                    for var in &env {
                        name.push('-');
                        name.push_str(&label(&var.name));
                        name.push_str(&label(&var.value));
                    }
                    out.push(Cell {
                        index: out.len(),
                        configuration: name.clone(),
                        name,
                        variant: None,
                        mode: *mode,
                        replicas,
                        cpu: cpu.clone(),
                        memory: s.memory.clone(),
                        pool_size: s.pool_size,
                        env: env.clone(),
                    });
                }
            }
        }
    }
    out
}

/// Every assignment of one value to each env axis, in name order.
fn env_combinations(axes: &BTreeMap<String, Vec<String>>) -> Vec<Vec<EnvVar>> {
    let mut out: Vec<Vec<EnvVar>> = vec![Vec::new()];
    for (name, values) in axes {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut env = prefix.clone();
                    env.push(EnvVar::new(name.clone(), v.clone()));
                    env
                })
            })
            .collect();
    }
    out
}

/// Text as a part of a DNS label: lower case letters and digits, anything else a '-'.
fn label(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .trim_matches('-')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes(modes: Vec<Mode>, replicas: Vec<u32>, cpu: Vec<&str>, total: Option<&str>) -> Axes {
        Axes {
            modes,
            replicas,
            cpu: cpu.into_iter().map(Quantity::from).collect(),
            total_cpu: total.map(Quantity::from),
            memory: Quantity::from("256Mi"),
            pool_size: PoolSize::Auto,
            env: vec![],
        }
    }

    #[test]
    fn axes_with_a_total_budget_split_cpu_per_replica() {
        let cells = axes_cells(&axes(
            vec![Mode::Single, Mode::Pool],
            vec![1, 2],
            vec![],
            Some("2"),
        ));
        let got: Vec<(String, String)> = cells
            .iter()
            .map(|c| (c.name.clone(), c.cpu.0.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("single-x1".into(), "2".into()),
                ("single-x2".into(), "1".into()),
                ("pool-x1".into(), "2".into()),
                ("pool-x2".into(), "1".into()),
            ]
        );
    }

    #[test]
    fn a_cell_reserves_its_cpu_limit_times_its_replicas() {
        let reserved = |replicas: Vec<u32>, cpu: Vec<&str>, total: Option<&str>| -> Vec<f64> {
            axes_cells(&axes(vec![Mode::Pool], replicas, cpu, total))
                .iter()
                .map(|c| c.reserved_cpu().unwrap())
                .collect()
        };
        // A shared budget rounds each replica's share down, so the cell stays within it.
        assert_eq!(
            reserved(vec![1, 2, 3], vec![], Some("2")),
            [2.0, 2.0, 1.998]
        );
        assert_eq!(reserved(vec![4], vec!["500m", "1"], None), [2.0, 4.0]);
        let mut bad = axes_cells(&axes(vec![Mode::Pool], vec![2], vec!["1"], None));
        bad[0].cpu = Quantity::from("lots");
        assert_eq!(bad[0].reserved_cpu(), None);
    }

    #[test]
    fn axes_with_several_cpu_values_name_the_cpu() {
        let cells = axes_cells(&axes(vec![Mode::Threads], vec![1], vec!["500m", "1"], None));
        let names: Vec<_> = cells.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["threads-x1-cpu500m", "threads-x1-cpu1"]);
    }

    #[test]
    fn child_names_are_stable_short_dns_labels() {
        let a = child_name("quickstart", Some("uid-1"), "single-x1");
        assert_eq!(a, child_name("quickstart", Some("uid-1"), "single-x1"));
        assert!(a.starts_with("quickstart-single-x1-"), "{a}");
        assert_ne!(a, child_name("quickstart", Some("uid-2"), "single-x1"));

        let long = child_name(&"r".repeat(200), None, &"c".repeat(40));
        assert!(long.len() <= MAX_CHILD_NAME, "{long}");
        let digit = child_name("2024-run", None, "a");
        assert!(digit.starts_with('b'), "{digit}");
        for name in [a, long, digit] {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
            assert!(!name.ends_with('-') && !name.contains("--"), "{name}");
        }
    }

    #[test]
    fn truncated_names_that_collide_differ_by_hash() {
        let run = "r".repeat(60);
        assert_ne!(
            child_name(&run, None, "cell-a"),
            child_name(&run, None, "cell-b")
        );
    }

    #[test]
    fn cell_env_overrides_target_env() {
        let shared = vec![
            EnvVar {
                name: "A".into(),
                value: "1".into(),
            },
            EnvVar {
                name: "B".into(),
                value: "1".into(),
            },
        ];
        let own = vec![EnvVar {
            name: "B".into(),
            value: "2".into(),
        }];
        let merged = merge_env(&shared, &own);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[1].value, "2");
    }

    #[test]
    fn cell_names_must_be_dns_labels() {
        assert!(check_cell_name("pool-x2").is_ok());
        assert!(check_cell_name("Pool").is_err());
        assert!(check_cell_name("-a").is_err());
        assert!(check_cell_name(&"a".repeat(41)).is_err());
    }
}
