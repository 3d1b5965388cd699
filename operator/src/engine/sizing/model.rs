//! What the measured configurations say of the others: an upper bound on each unmeasured
//! configuration's capacity (safe, for ruling it out), a point estimate (for the report), and
//! the places where the service broke the assumptions the bound rests on.
//!
//! The bound assumes, within one family (the configurations sharing mode and env, which differ
//! in replicas and CPU):
//! - more CPU per replica never lowers capacity: a configuration with at least the CPU of
//!   another, at the same replicas, holds at least as much;
//! - a replica adds at most its share: capacity per replica never grows with replicas
//!   (Amdahl's and Gunther's laws both have C(N)/N non-increasing), so N replicas hold at most
//!   N/M times what M replicas held, and never less than fewer replicas held.
//!
//! - a core adds at most its share too: capacity per core of CPU limit never grows with the
//!   limit (a service that holds 100 rps at 1 CPU holds at most 200 at 2).
//!
//! So a configuration of r replicas at q cores per replica holds at most
//! `max(1, r / r_m) x max(1, q / q_m) x failed_m x (1 + NOISE)` for every measured
//! configuration m of its family (failed_m the lowest rate m failed). `NOISE` allows for the
//! measurements' spread between runs. A measurement that shows the service breaking one of
//! these (more resources, less capacity; replicas or CPU adding more than their share, as a
//! quota that throttles a small limit's p99 can) is named in the status, and the bounds that
//! assumption gave are no longer used.
//!
//! The point estimate fits Amdahl's law C(N) = lambda_q N / (1 + sigma (N - 1)) to the
//! family's measured capacities (one sigma per family, one lambda per CPU value; sigma 0, linear,
//! while no CPU value has two replica counts measured), with lambda interpolated linearly in
//! CPU between the values measured (in proportion to CPU beyond them). Gunther's USL adds a
//! second, crosstalk term that needs four or more points per curve; a sizing search measures
//! two or three, so the report says Amdahl.

/// Allowance for the spread between measurements of one configuration: a bound is raised by
/// this fraction before it rules anything out.
pub const NOISE: f64 = 0.10;

use super::knowledge::Bracket;

/// One configuration's place in the space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Its family: mode x env values.
    pub family: usize,
    /// Replicas.
    pub replicas: u32,
    /// CPU per replica, cores.
    pub cpu: f64,
}

impl Point {
    /// True when `self` has at most the replicas and CPU of `other`, in the same family.
    pub fn dominated_by(&self, other: &Point) -> bool {
        self.family == other.family && self.replicas <= other.replicas && self.cpu <= other.cpu
    }
}

/// A measured configuration: where it is, and its capacity bracket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasuredPoint {
    /// Index of the configuration.
    pub index: usize,
    /// Its place.
    pub at: Point,
    /// The rates it held and failed.
    pub bracket: Bracket,
}

/// The upper bound on the capacity of a configuration at `at`, from `measured` (those of its
/// family with a rate that failed, not `untrusted`), and the index of the measurement it comes
/// from; None when nothing measured bounds it.
pub fn upper_bound(
    at: &Point,
    measured: &[MeasuredPoint],
    untrusted: &[usize],
) -> Option<(f64, usize)> {
    measured
        .iter()
        .filter(|m| m.at.family == at.family && !untrusted.contains(&m.index))
        .filter_map(|m| {
            let failed = m.bracket.failed?;
            let replicas = (f64::from(at.replicas) / f64::from(m.at.replicas)).max(1.0);
            let cpu = if m.at.cpu > 0.0 {
                (at.cpu / m.at.cpu).max(1.0)
            } else {
                f64::INFINITY
            };
            Some((replicas * cpu * failed * (1.0 + NOISE), m.index))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

/// Where the measurements break the bound's assumptions: (sentence, the measurement whose
/// bounds are no longer trusted). More CPU or replicas that held clearly less, or more
/// replicas that held clearly more than their share.
pub fn broken(measured: &[MeasuredPoint], name: &dyn Fn(usize) -> String) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for small in measured {
        for big in measured {
            if small.index == big.index || !small.at.dominated_by(&big.at) {
                continue;
            }
            if let (Some(held), Some(failed)) = (small.bracket.held, big.bracket.failed)
                && held > failed * (1.0 + NOISE)
            {
                out.push((
                    format!(
                        "{} held {} rps but {}, with at least its replicas and CPU, failed at {} \
                         rps: more resources lowered capacity, so bounds from {} are not used",
                        name(small.index),
                        rate(held),
                        name(big.index),
                        rate(failed),
                        name(big.index)
                    ),
                    big.index,
                ));
            }
            // Below: what the bigger one held against what the smaller one failed at.
            let (Some(held), Some(failed)) = (big.bracket.held, small.bracket.failed) else {
                continue;
            };
            let (rs, rb) = (f64::from(small.at.replicas), f64::from(big.at.replicas));
            if big.at.cpu == small.at.cpu && rb > rs && held / rb > failed / rs * (1.0 + NOISE) {
                out.push((
                    format!(
                        "{} held {} rps, more than {:.1}x what {} failed at ({} rps): replicas \
                         added more than their share, so bounds from {} are not used",
                        name(big.index),
                        rate(held),
                        rb / rs,
                        name(small.index),
                        rate(failed),
                        name(small.index)
                    ),
                    small.index,
                ));
            }
            let (qs, qb) = (small.at.cpu, big.at.cpu);
            if small.at.replicas == big.at.replicas
                && qb > qs
                && qs > 0.0
                && held / qb > failed / qs * (1.0 + NOISE)
            {
                out.push((
                    format!(
                        "{} held {} rps, more than {:.1}x what {} failed at ({} rps): CPU added \
                         more than its share, so bounds from {} are not used",
                        name(big.index),
                        rate(held),
                        qb / qs,
                        name(small.index),
                        rate(failed),
                        name(small.index)
                    ),
                    small.index,
                ));
            }
        }
    }
    out
}

/// One family's fit: its index, sigma, and (cpu, lambda) sorted by cpu.
type FamilyFit = (usize, f64, Vec<(f64, f64)>);

/// Amdahl's law fitted per family: predicts a configuration's capacity from the measured ones.
#[derive(Debug, Clone, Default)]
pub struct Fit {
    families: Vec<FamilyFit>,
}

impl Fit {
    /// Fits the law to `points`: (place, capacity estimate).
    pub fn of(points: &[(Point, f64)]) -> Fit {
        let mut families: Vec<usize> = points.iter().map(|(p, _)| p.family).collect();
        families.sort_unstable();
        families.dedup();
        let fitted = families
            .into_iter()
            .map(|f| {
                let mine: Vec<(Point, f64)> = points
                    .iter()
                    .copied()
                    .filter(|(p, c)| p.family == f && *c > 0.0)
                    .collect();
                let sigma = best_sigma(&mine);
                (f, sigma, lambdas(&mine, sigma))
            })
            .collect();
        Fit { families: fitted }
    }

    /// The predicted capacity at `at`; None when nothing of its family was measured.
    pub fn predict(&self, at: &Point) -> Option<f64> {
        let (_, sigma, lambdas) = self.families.iter().find(|(f, _, _)| *f == at.family)?;
        let lambda = interpolate(lambdas, at.cpu)?;
        let n = f64::from(at.replicas);
        Some(lambda * n / (1.0 + sigma * (n - 1.0)))
    }
}

/// The sigma in [0, 1] (steps of 0.01) with the least squared relative error; 0 when no CPU
/// value has two replica counts measured (nothing to fit it from).
fn best_sigma(points: &[(Point, f64)]) -> f64 {
    let fits = points.iter().any(|(p, _)| {
        points
            .iter()
            .any(|(o, _)| o.cpu == p.cpu && o.replicas != p.replicas)
    });
    if !fits {
        return 0.0;
    }
    let error = |sigma: f64| -> f64 {
        let l = lambdas(points, sigma);
        points
            .iter()
            .map(|(p, c)| {
                let lambda = interpolate(&l, p.cpu).unwrap_or(0.0);
                let n = f64::from(p.replicas);
                let predicted = lambda * n / (1.0 + sigma * (n - 1.0));
                ((predicted - c) / c).powi(2)
            })
            .sum()
    };
    (0..=100)
        .map(|i| f64::from(i) / 100.0)
        .min_by(|a, b| error(*a).total_cmp(&error(*b)))
        .unwrap_or(0.0)
}

/// Per CPU value measured: lambda (one replica's capacity) as the mean over its points of
/// C (1 + sigma (N - 1)) / N, sorted by CPU.
fn lambdas(points: &[(Point, f64)], sigma: f64) -> Vec<(f64, f64)> {
    let mut cpus: Vec<f64> = points.iter().map(|(p, _)| p.cpu).collect();
    cpus.sort_by(f64::total_cmp);
    cpus.dedup();
    cpus.into_iter()
        .map(|q| {
            let per: Vec<f64> = points
                .iter()
                .filter(|(p, _)| p.cpu == q)
                .map(|(p, c)| {
                    let n = f64::from(p.replicas);
                    c * (1.0 + sigma * (n - 1.0)) / n
                })
                .collect();
            (q, per.iter().sum::<f64>() / per.len() as f64)
        })
        .collect()
}

/// lambda at `cpu`: linear between the CPU values measured, in proportion to CPU beyond them.
fn interpolate(lambdas: &[(f64, f64)], cpu: f64) -> Option<f64> {
    let first = lambdas.first()?;
    let last = lambdas.last()?;
    if cpu <= first.0 {
        return Some(first.1 * cpu / first.0);
    }
    if cpu >= last.0 {
        return Some(last.1 * cpu / last.0);
    }
    lambdas.windows(2).find_map(|w| {
        let ((a, la), (b, lb)) = (w[0], w[1]);
        (cpu >= a && cpu <= b).then(|| la + (lb - la) * (cpu - a) / (b - a))
    })
}

fn rate(r: f64) -> String {
    crate::engine::capacity::probe::rate_text(r)
}
