//! Latency histograms: one unit (microseconds), one shape, and a compact text form.
//!
//! Results carry histograms, not percentiles, so documents from several load-generator pods
//! merge exactly (adding histograms is exact; averaging percentiles is not). The compact form is
//! HdrHistogram's V2 encoding compressed with deflate, then base64, the same form the Java and Go
//! HdrHistogram libraries read.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};

/// Latency histogram; every value is in microseconds.
pub type LatencyHistogram = Histogram<u64>;

/// Largest latency a histogram holds: one hour, in microseconds. Larger values saturate here.
pub const MAX_MICROS: u64 = 3_600_000_000;

/// Significant figures of the phase histograms (0.1% resolution).
pub const PHASE_SIGFIG: u8 = 3;

/// Significant figures of the per-second timeline histograms: 1% resolution keeps them small
/// enough to carry one per second in the result document.
pub const TIMELINE_SIGFIG: u8 = 2;

/// A new, empty latency histogram with `sigfig` significant figures.
pub fn new_histogram(sigfig: u8) -> LatencyHistogram {
    // The bounds are constants that hdrhistogram accepts, so this cannot fail.
    Histogram::new_with_bounds(1, MAX_MICROS, sigfig).expect("constant histogram bounds are valid")
}

/// Records `micros`, clamped to the histogram's range (0 counts as 1 µs: never lost).
#[inline]
pub fn record(hist: &mut LatencyHistogram, micros: u64) {
    hist.saturating_record(micros.clamp(1, MAX_MICROS));
}

/// Why a compact histogram could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// The text is not base64.
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The bytes are not an HdrHistogram V2 (deflate) encoding.
    #[error("histogram bytes are not an HdrHistogram V2 encoding: {0}")]
    Decode(String),
    /// Two histograms could not be added (their ranges do not fit).
    #[error("histograms cannot be added: {0}")]
    Add(String),
}

/// Encodes a histogram as base64 of its V2 + deflate serialization.
pub fn encode(hist: &LatencyHistogram) -> String {
    let mut bytes = Vec::new();
    // Serializing into a Vec only fails for histograms with absurd ranges, which we never make.
    V2DeflateSerializer::new()
        .serialize(hist, &mut bytes)
        .expect("serializing a histogram into memory does not fail");
    STANDARD.encode(bytes)
}

/// Decodes the output of [`encode`] (or any V2 / V2-deflate HdrHistogram in base64).
pub fn decode(text: &str) -> Result<LatencyHistogram, HistogramError> {
    let bytes = STANDARD.decode(text.trim())?;
    let mut hist: LatencyHistogram = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
    // Decoded histograms must accept any value another document may add to them.
    hist.auto(true);
    Ok(hist)
}

/// Adds `source` into `target` (exact).
pub fn add(target: &mut LatencyHistogram, source: &LatencyHistogram) -> Result<(), HistogramError> {
    target
        .add(source)
        .map_err(|e| HistogramError::Add(format!("{e:?}")))
}

/// Microseconds to fractional milliseconds.
#[inline]
pub fn micros_to_ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip_is_exact() {
        let mut h = new_histogram(PHASE_SIGFIG);
        for v in [1, 50, 999, 20_000, 1_000_000, MAX_MICROS + 5] {
            record(&mut h, v);
        }
        let text = encode(&h);
        let back = decode(&text).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.max(), h.max());
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
        assert!(decode("not base64!").is_err());
        assert!(decode("aGVsbG8=").is_err());
    }

    #[test]
    fn empty_histograms_round_trip() {
        let h = new_histogram(TIMELINE_SIGFIG);
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back.len(), 0);
    }
}
