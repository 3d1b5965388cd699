//! Drawing primitives the answer charts share (hockey stick, capacity per run, sizing map,
//! forest plot): a document with escaped text, linear and logarithmic scales with "nice"
//! ticks, and one number format per axis. Hand-written like [`super::svg`] (docs/
//! architecture.md, "Charts", says why not a plotting crate): every chart is a standalone SVG
//! with a white background, system fonts, and a `<title>` on each mark for a hover tooltip.

use std::fmt::Write;

/// Okabe-Ito colours (colour-blind friendly), in the order series take them.
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000",
];
/// Held, passed, better.
pub const GOOD: &str = "#009E73";
/// Failed, regressed.
pub const BAD: &str = "#D55E00";
/// Neither: within noise, not needed, no verdict.
pub const NEUTRAL: &str = "#777777";

/// The system font stack: no web font is ever fetched.
pub const FONTS: &str = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif";

/// An SVG document being written.
pub struct Doc {
    out: String,
}

impl Doc {
    /// A `width` x `height` document titled `title` (drawn at the top, and as `<title>`).
    pub fn new(width: f64, height: f64, title: &str) -> Doc {
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
             viewBox=\"0 0 {width} {height}\" font-family=\"{FONTS}\" font-size=\"12\">\n\
             <title>{t}</title>\n<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" \
             patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" \
             height=\"6\" fill=\"#f4f4f4\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" \
             stroke=\"#bbb\" stroke-width=\"2\"/></pattern></defs>\n\
             <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
             <text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\" \
             text-anchor=\"middle\">{t}</text>\n",
            width / 2.0,
            t = esc(title)
        );
        Doc { out }
    }

    /// Raw markup (already escaped by the caller).
    pub fn raw(&mut self, markup: &str) {
        self.out.push_str(markup);
        self.out.push('\n');
    }

    /// Text at (x, y); `attrs` are extra attributes such as `text-anchor="end"`.
    pub fn text(&mut self, x: f64, y: f64, attrs: &str, text: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" {attrs}>{}</text>",
            esc(text)
        );
    }

    /// A line from (x1, y1) to (x2, y2) with `attrs` (stroke etc.).
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), attrs: &str) {
        let _ = writeln!(
            self.out,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" {attrs}/>"
        );
    }

    /// A rectangle with `attrs` and a tooltip `tip` (none when empty).
    pub fn rect(&mut self, (x, y): (f64, f64), (w, h): (f64, f64), attrs: &str, tip: &str) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" {attrs}>{}</rect>",
            w.max(0.0),
            h.max(0.0),
            tooltip(tip)
        );
    }

    /// A circle of radius `r` with `attrs` and a tooltip `tip`.
    pub fn circle(&mut self, (x, y): (f64, f64), r: f64, attrs: &str, tip: &str) {
        let _ = writeln!(
            self.out,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" {attrs}>{}</circle>",
            tooltip(tip)
        );
    }

    /// The finished document.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

fn tooltip(tip: &str) -> String {
    if tip.is_empty() {
        String::new()
    } else {
        format!("<title>{}</title>", esc(tip))
    }
}

/// A map from data values to pixels along one axis.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// Lowest value shown.
    pub lo: f64,
    /// Highest value shown.
    pub hi: f64,
    /// Pixel of `lo` (for a y axis the larger).
    pub px_lo: f64,
    /// Pixel of `hi`.
    pub px_hi: f64,
    /// Logarithmic (then `lo` > 0).
    pub log: bool,
}

impl Scale {
    /// The pixel of value `v`, clamped to the axis.
    pub fn px(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.lo * 1e-3).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        let f = if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.px_lo + f * (self.px_hi - self.px_lo)
    }

    /// A linear axis from 0 to a nice value above `max`, and its ticks.
    pub fn linear_from_zero(max: f64, px_lo: f64, px_hi: f64) -> (Scale, Vec<f64>) {
        let (top, step) = nice_axis(max);
        let ticks = (0..=((top / step).round() as usize))
            .map(|i| i as f64 * step)
            .collect();
        let scale = Scale {
            lo: 0.0,
            hi: top,
            px_lo,
            px_hi,
            log: false,
        };
        (scale, ticks)
    }

    /// A logarithmic axis covering `lo..hi` (both > 0) out to the powers of ten around them,
    /// with ticks at 1, 2 and 5 times those powers.
    pub fn log_covering(lo: f64, hi: f64, px_lo: f64, px_hi: f64) -> (Scale, Vec<f64>) {
        let lo = 10f64.powf(lo.max(1e-9).log10().floor());
        let hi = 10f64.powf(hi.max(lo * 10.0).log10().ceil());
        let mut ticks = Vec::new();
        let mut p = lo;
        while p <= hi * 1.0001 {
            for m in [1.0, 2.0, 5.0] {
                if m * p <= hi * 1.0001 {
                    ticks.push(m * p);
                }
            }
            p *= 10.0;
        }
        let scale = Scale {
            lo,
            hi,
            px_lo,
            px_hi,
            log: true,
        };
        (scale, ticks)
    }
}

/// The one number format of an axis whose ticks are `ticks`: as many decimals as the finest
/// tick needs, so "0.5, 1.0, 1.5" and never "0.5, 1, 1.5".
pub fn axis_format(ticks: &[f64]) -> impl Fn(f64) -> String + use<> {
    let decimals = ticks
        .iter()
        .filter(|t| **t > 0.0)
        .map(|t| {
            (0..4)
                .find(|d| {
                    let m = 10f64.powi(*d);
                    ((t * m).round() - t * m).abs() < 1e-6
                })
                .unwrap_or(3)
        })
        .max()
        .unwrap_or(0) as usize;
    move |v: f64| format!("{v:.decimals$}")
}

/// Horizontal grid lines and labels of a y axis at `ticks`, from `x0` to `x1`, and the
/// axis's rotated label at `label_x`.
pub fn y_ticks(doc: &mut Doc, y: &Scale, ticks: &[f64], (x0, x1): (f64, f64), label: &str) {
    let fmt = axis_format(ticks);
    for t in ticks {
        let py = y.px(*t);
        doc.line((x0, py), (x1, py), "stroke=\"#e4e4e4\"");
        doc.text(x0 - 6.0, py + 4.0, "text-anchor=\"end\"", &fmt(*t));
    }
    let mid = (y.px_lo + y.px_hi) / 2.0;
    let lx = (x0 - 48.0).max(14.0);
    doc.text(
        lx,
        mid,
        &format!("text-anchor=\"middle\" transform=\"rotate(-90 {lx:.1} {mid:.1})\""),
        label,
    );
    doc.line((x0, y.px_lo), (x1, y.px_lo), "stroke=\"#333\"");
}

/// Vertical ticks and labels of an x axis at `ticks`, from `y0` (top) to `y1` (the axis), and
/// the axis's label under it.
pub fn x_ticks(doc: &mut Doc, x: &Scale, ticks: &[f64], (y0, y1): (f64, f64), label: &str) {
    let fmt = axis_format(ticks);
    for t in ticks {
        let px = x.px(*t);
        doc.line((px, y0), (px, y1), "stroke=\"#e4e4e4\"");
        doc.text(px, y1 + 15.0, "text-anchor=\"middle\"", &fmt(*t));
    }
    doc.line((x.px_lo, y1), (x.px_hi, y1), "stroke=\"#333\"");
    doc.text(
        (x.px_lo + x.px_hi) / 2.0,
        y1 + 32.0,
        "text-anchor=\"middle\"",
        label,
    );
}

/// Legend entries (a swatch's markup at (x, y) and its text), one per line from (x, y).
pub fn legend(doc: &mut Doc, (x, y): (f64, f64), entries: &[(String, String)]) {
    for (i, (swatch, text)) in entries.iter().enumerate() {
        let yy = y + i as f64 * 18.0;
        doc.raw(
            &swatch
                .replace("{x}", &format!("{:.1}", x + 6.0))
                .replace("{y}", &format!("{:.1}", yy - 4.0)),
        );
        doc.text(x + 16.0, yy, "", text);
    }
}

/// A note in a box across the chart: what is missing or why the chart says less than asked.
/// Never an empty chart: a chart with nothing to draw says so in words.
pub fn note_chart(title: &str, note: &str) -> String {
    let mut doc = Doc::new(760.0, 120.0, title);
    doc.rect(
        (20.0, 40.0),
        (720.0, 60.0),
        "fill=\"url(#hatch)\" stroke=\"#999\"",
        "",
    );
    doc.text(380.0, 76.0, "text-anchor=\"middle\" font-size=\"13\"", note);
    doc.finish()
}

/// Escapes text for XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" axis maximum and step for values up to `max` (1, 2 or 5 times a power of ten).
pub fn nice_axis(max: f64) -> (f64, f64) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, 0.25);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

/// `text` cut to `n` characters with an ellipsis.
pub fn clip(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        text.to_owned()
    } else {
        text.chars().take(n - 1).chain(['…']).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_number_format_per_axis() {
        let f = axis_format(&[0.0, 0.5, 1.0, 1.5]);
        assert_eq!(
            (f(0.0), f(1.0), f(1.5)),
            ("0.0".into(), "1.0".into(), "1.5".into())
        );
        let f = axis_format(&[0.0, 20.0, 40.0]);
        assert_eq!(f(40.0), "40");
    }

    #[test]
    fn a_log_scale_puts_equal_ratios_at_equal_distances() {
        let (s, ticks) = Scale::log_covering(3.0, 400.0, 0.0, 300.0);
        assert_eq!((s.lo, s.hi), (1.0, 1000.0));
        assert!(ticks.contains(&200.0) && ticks.contains(&1.0));
        let d1 = s.px(20.0 * 1.03) - s.px(20.0);
        let d2 = s.px(400.0 * 1.03) - s.px(400.0);
        assert!((d1 - d2).abs() < 1e-9);
    }

    #[test]
    fn text_is_escaped() {
        let mut d = Doc::new(10.0, 10.0, "a<b & \"c\"");
        d.text(0.0, 0.0, "", "x<y");
        let s = d.finish();
        assert!(s.contains("a&lt;b &amp; &quot;c&quot;") && s.contains("x&lt;y"));
        assert!(!s.contains("a<b"));
    }
}
