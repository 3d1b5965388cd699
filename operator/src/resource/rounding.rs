//! Figures as the status and the reports keep them: rounded to a fixed number of decimals, so a
//! status written twice from the same measurement is the same text, and stays small. One place,
//! so that the same figure is never rounded two ways. (`results/repeat.rs` rounds a percent to
//! 0.1 inline, as `x * 1000 / 10`: written as `round1(x * 100)` it could differ at exact halves
//! from figures already stored.)

/// `v` to `places` decimals (half away from zero, as [`f64::round`]).
pub fn decimals(v: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (v * scale).round() / scale
}

/// To 0.1: percent differences and seconds (the kubelet's figures).
pub fn round1(v: f64) -> f64 {
    decimals(v, 1)
}

/// To 0.01: rates, ratios and milliseconds.
pub fn round2(v: f64) -> f64 {
    decimals(v, 2)
}

/// To 0.001: CPU cores.
pub fn round3(v: f64) -> f64 {
    decimals(v, 3)
}

/// To 0.0001: fractions (error rates, shares of the sends).
pub fn round4(v: f64) -> f64 {
    decimals(v, 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rounds_to_its_places_half_away_from_zero() {
        assert_eq!(round1(12.34), 12.3);
        assert_eq!(round2(46.255_1), 46.26);
        assert_eq!(round2(-0.125_1), -0.13);
        assert_eq!(round3(0.333_33), 0.333);
        assert_eq!(round4(0.012_345), 0.0123);
        assert_eq!(decimals(7.0, 0), 7.0);
    }
}
