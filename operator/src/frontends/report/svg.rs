//! Hand-written SVG charts: grouped bars (p99 or throughput per configuration) and lines
//! (latency over time). Plain text with no dependencies; every chart is a standalone,
//! well-formed XML document that GitHub and browsers render inline in report.md.

use std::fmt::Write;

// Escaping and axis steps are the drawing primitives of every chart (plot.rs); re-exported so the
// bar and line charts here and their callers name them where they always have.
pub use super::plot::{esc, nice_axis};

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

/// Colours per series (configuration), colour-blind friendly (Okabe-Ito).
const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

/// One group of bars (e.g. a phase/endpoint) with one value per series (configuration).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarGroup {
    /// Label under the group.
    pub label: String,
    /// Value per series, in series order; `None` draws no bar (cell failed).
    pub values: Vec<Option<f64>>,
    /// Per series, each repetition's value in the order measured (empty when the cell ran
    /// once, or for a series without a bar): drawn on the bar as a dot each and a min–max
    /// whisker, so a median's bar shows how far the repetitions moved.
    pub repetitions: Vec<Vec<f64>>,
    /// Per series, why a value is absent ("too few samples: 40 of 100", "failed:
    /// NeverReady"): drawn as a hatched, labelled stub, so a missing bar reads as missing and a
    /// chart whose every bar is missing is never blank. Empty: nothing to say.
    pub missing: Vec<Option<String>>,
}

/// Under a bar chart with repetitions: how to read the marks on the bars.
pub const REPETITIONS_CAPTION: &str =
    "bar: median of the repetitions · dots: each repetition, in the order run · whisker: min–max";

/// One line of a line chart: (x, y) points in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend label.
    pub label: String,
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
}

/// The one number format of the values on a chart: enough decimals for the smallest of them
/// to keep two significant digits, used for all, so "81" never stands beside "80.2".
fn chart_format(values: impl Iterator<Item = f64>) -> impl Fn(f64) -> String {
    let least = values.filter(|v| *v > 0.0).fold(f64::MAX, f64::min);
    let decimals = if least >= 100.0 {
        0
    } else if least >= 10.0 {
        1
    } else {
        2
    };
    move |v: f64| format!("{v:.decimals$}")
}

fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || (v.fract() == 0.0 && v.abs() < 1e15) {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn header(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"{}\" font-size=\"12\">\n\
         <defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" \
         stroke=\"#aaa\" stroke-width=\"2\"/></pattern></defs>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>\n",
        super::plot::FONTS,
        WIDTH / 2.0,
        esc(title)
    );
}

fn legend(out: &mut String, series: &[String]) {
    for (i, s) in series.iter().enumerate() {
        let y = TOP + 10.0 + i as f64 * 20.0;
        let x = WIDTH - RIGHT + 15.0;
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\
             <text x=\"{}\" y=\"{}\"><title>{}</title>{}</text>",
            y - 10.0,
            PALETTE[i % PALETTE.len()],
            x + 18.0,
            y,
            esc(s),
            // The legend column is 150 px: a longer name is cut, whole in its tooltip.
            esc(&super::plot::clip(s, 22))
        );
    }
}

fn y_axis(out: &mut String, label: &str, ticks: &[(f64, String)]) {
    let plot_h = HEIGHT - TOP - BOTTOM;
    for (frac, text) in ticks {
        let y = TOP + plot_h * (1.0 - frac);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            esc(text)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"16\" y=\"{:.1}\" transform=\"rotate(-90 16 {:.1})\" text-anchor=\"middle\">{}</text>\n\
         <line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#333\"/>",
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        esc(label),
        HEIGHT - BOTTOM,
        WIDTH - RIGHT,
        HEIGHT - BOTTOM
    );
}

/// Every value of `g`: its bars and each repetition.
fn all_values(g: &BarGroup) -> impl Iterator<Item = &f64> {
    g.values
        .iter()
        .flatten()
        .chain(g.repetitions.iter().flatten())
}

/// The value axis of bars: its top and its ticks (fraction of the height, label). No tick
/// when every bar is missing: an axis of made-up numbers would read as a scale.
fn value_axis(groups: &[BarGroup]) -> (f64, Vec<(f64, String)>) {
    let max = groups
        .iter()
        .flat_map(all_values)
        .fold(0.0f64, |a, &b| a.max(b));
    let (top, step) = nice_axis(max);
    let tick_values: Vec<f64> = (0..=((top / step).round() as usize))
        .map(|i| i as f64 * step)
        .collect();
    let tick_text = super::plot::axis_format(&tick_values);
    let any_value = groups.iter().any(|g| g.values.iter().any(Option::is_some));
    let ticks = tick_values
        .iter()
        .filter(|_| any_value)
        .map(|t| (t / top, tick_text(*t)))
        .collect();
    (top, ticks)
}

/// Grouped bar chart: one group per `groups` entry, one coloured bar per series.
pub fn bar_chart(title: &str, y_label: &str, series: &[String], groups: &[BarGroup]) -> String {
    let mut out = String::new();
    header(&mut out, title);
    let (top, ticks) = value_axis(groups);
    let fmt_num = chart_format(groups.iter().flat_map(all_values).copied());
    y_axis(&mut out, y_label, &ticks);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let group_w = plot_w / groups.len().max(1) as f64;
    let bar_w = (group_w * 0.8) / series.len().max(1) as f64;
    let y_of = |v: f64| TOP + plot_h - if top > 0.0 { plot_h * v / top } else { 0.0 };
    let mut repeated = false;
    for (gi, g) in groups.iter().enumerate() {
        let gx = LEFT + gi as f64 * group_w + group_w * 0.1;
        for (si, v) in g.values.iter().enumerate() {
            let Some(v) = v else {
                if let Some(Some(why)) = g.missing.get(si) {
                    let x = gx + si as f64 * bar_w;
                    missing_stub(&mut out, x, (bar_w - 2.0).max(1.0), why);
                }
                continue;
            };
            let h = if top > 0.0 { plot_h * v / top } else { 0.0 };
            let x = gx + si as f64 * bar_w;
            let name = series.get(si).map(String::as_str).unwrap_or("");
            let reps = g.repetitions.get(si).map(Vec::as_slice).unwrap_or(&[]);
            // The value's label goes above the bar and its whisker.
            let mut label_y = TOP + plot_h - h - 3.0;
            let _ = writeln!(
                out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{}\">\
                 <title>{}: {}</title></rect>",
                TOP + plot_h - h,
                (bar_w - 2.0).max(1.0),
                PALETTE[si % PALETTE.len()],
                esc(name),
                fmt_num(*v)
            );
            if reps.len() > 1 {
                repeated = true;
                let y_top = repetition_marks(&mut out, name, reps, x, bar_w - 2.0, y_of, &fmt_num);
                // Above the whisker's cap and the highest dot (radius 2.5).
                label_y = label_y.min(y_top - 6.0);
            }
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{label_y:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                x + bar_w / 2.0 - 1.0,
                fmt_num(*v)
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            LEFT + gi as f64 * group_w + group_w / 2.0,
            HEIGHT - BOTTOM + 18.0,
            esc(&g.label)
        );
    }
    if repeated {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            LEFT + plot_w / 2.0,
            HEIGHT - 8.0,
            esc(REPETITIONS_CAPTION)
        );
    }
    legend(&mut out, series);
    out.push_str("</svg>\n");
    out
}

/// Where a bar is missing: a hatched stub at the foot of the plot with `why` written up it.
fn missing_stub(out: &mut String, x: f64, w: f64, why: &str) {
    let plot_h = HEIGHT - TOP - BOTTOM;
    let (y, h) = (TOP + plot_h * 0.25, plot_h * 0.75);
    let (cx, cy) = (x + w / 2.0 + 4.0, TOP + plot_h - 6.0);
    let _ = writeln!(
        out,
        "<rect class=\"missing\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" \
         fill=\"url(#hatch)\" stroke=\"#aaa\"><title>{t}</title></rect>\
         <text x=\"{cx:.1}\" y=\"{cy:.1}\" font-size=\"11\" fill=\"#444\" \
         transform=\"rotate(-90 {cx:.1} {cy:.1})\">{t}</text>",
        t = esc(why)
    );
}

/// On the bar at `x` (`w` wide) of series `name`: a min–max whisker of `values` at its centre
/// and one dot per value, spread left to right in the order measured; `y_of` places a value.
/// Returns the whisker's top.
fn repetition_marks(
    out: &mut String,
    name: &str,
    values: &[f64],
    x: f64,
    w: f64,
    y_of: impl Fn(f64) -> f64,
    fmt_num: &dyn Fn(f64) -> String,
) -> f64 {
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let cx = x + w / 2.0;
    let (y_lo, y_hi) = (y_of(lo), y_of(hi));
    let cap = (w / 4.0).clamp(2.0, 6.0);
    let _ = writeln!(
        out,
        "<g class=\"whisker\" stroke=\"#222\" stroke-width=\"1.2\">\
         <title>{}: min {} – max {} over {} repetitions</title>\
         <line x1=\"{cx:.1}\" y1=\"{y_lo:.1}\" x2=\"{cx:.1}\" y2=\"{y_hi:.1}\"/>\
         <line x1=\"{:.1}\" y1=\"{y_lo:.1}\" x2=\"{:.1}\" y2=\"{y_lo:.1}\"/>\
         <line x1=\"{:.1}\" y1=\"{y_hi:.1}\" x2=\"{:.1}\" y2=\"{y_hi:.1}\"/></g>",
        esc(name),
        fmt_num(lo),
        fmt_num(hi),
        values.len(),
        cx - cap,
        cx + cap,
        cx - cap,
        cx + cap
    );
    let n = values.len() as f64;
    for (k, &v) in values.iter().enumerate() {
        let _ = writeln!(
            out,
            "<circle class=\"repetition\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"white\" \
             stroke=\"#222\"><title>{}, repetition {}: {}</title></circle>",
            x + w * (k as f64 + 1.0) / (n + 1.0),
            y_of(v),
            esc(name),
            k + 1,
            fmt_num(v)
        );
    }
    y_hi
}

/// The time axis's ticks, every `step` seconds up to `top`, labelled in seconds.
fn time_ticks(out: &mut String, top: f64, step: f64, px: impl Fn(f64) -> f64) {
    let format = super::plot::axis_format(&[step]);
    for i in 0..=((top / step).round() as usize) {
        let t = i as f64 * step;
        let _ = writeln!(
            out,
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#333\"/>\
             <text x=\"{0:.1}\" y=\"{3:.1}\" font-size=\"11\" text-anchor=\"middle\">{4} s</text>",
            px(t),
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 5.0,
            HEIGHT - BOTTOM + 17.0,
            format(t)
        );
    }
}

/// Line chart with a logarithmic y axis (latencies span orders of magnitude between
/// configurations), x in seconds; `markers` are labelled vertical lines (phase boundaries).
pub fn line_chart(title: &str, y_label: &str, lines: &[Line], markers: &[(f64, String)]) -> String {
    let mut out = String::new();
    header(&mut out, title);
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let (mut lo, mut hi) = ys.fold((f64::MAX, 0.0f64), |(a, b), y| {
        if y > 0.0 {
            (a.min(y), b.max(y))
        } else {
            (a, b)
        }
    });
    if hi <= 0.0 {
        lo = 1.0;
        hi = 10.0;
    }
    let lo_exp = lo.log10().floor() as i32;
    let hi_exp = (hi.log10().ceil() as i32).max(lo_exp + 1);
    let span = f64::from(hi_exp - lo_exp);
    let ticks: Vec<(f64, String)> = (lo_exp..=hi_exp)
        .map(|e| (f64::from(e - lo_exp) / span, fmt_num(10f64.powi(e))))
        .collect();
    y_axis(&mut out, y_label, &ticks);
    let x_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .chain(markers.iter().map(|m| m.0))
        .fold(1.0f64, f64::max);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    // Whole seconds on a 1-2-5 step, so the time axis reads as time.
    let (x_top, x_step) = nice_axis(x_max);
    let px = |x: f64| LEFT + plot_w * x / x_top;
    time_ticks(&mut out, x_top, x_step, px);
    let py = |y: f64| {
        let f = (y.max(10f64.powi(lo_exp)).log10() - f64::from(lo_exp)) / span;
        TOP + plot_h * (1.0 - f)
    };
    for (x, label) in markers {
        let _ = writeln!(
            out,
            "<line x1=\"{0:.1}\" y1=\"{TOP}\" x2=\"{0:.1}\" y2=\"{1:.1}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\
             <text x=\"{2:.1}\" y=\"{3:.1}\" font-size=\"10\">{4}</text>",
            px(*x),
            HEIGHT - BOTTOM,
            px(*x) + 3.0,
            TOP + 10.0,
            esc(label)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">seconds since the end of warm-up</text>",
        LEFT + plot_w / 2.0,
        HEIGHT - 12.0
    );
    for (i, l) in lines.iter().enumerate() {
        let pts: Vec<String> = l
            .points
            .iter()
            .filter(|p| p.1 > 0.0)
            .map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" points=\"{}\"/>",
            PALETTE[i % PALETTE.len()],
            pts.join(" ")
        );
    }
    let labels: Vec<String> = lines.iter().map(|l| l.label.clone()).collect();
    legend(&mut out, &labels);
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axis_rounds_up_to_1_2_5_steps() {
        assert_eq!(nice_axis(1600.0), (2000.0, 500.0));
        assert_eq!(nice_axis(48.0), (50.0, 10.0));
        assert_eq!(nice_axis(0.0), (1.0, 0.25));
    }

    #[test]
    fn bar_chart_is_escaped_and_draws_one_bar_per_value() {
        let svg = bar_chart(
            "p99 <mixed>",
            "ms",
            &["a&b".into(), "c".into()],
            &[
                BarGroup {
                    label: "fast".into(),
                    values: vec![Some(10.0), None],
                    ..Default::default()
                },
                BarGroup {
                    label: "slow".into(),
                    values: vec![Some(5.0), Some(7.0)],
                    ..Default::default()
                },
            ],
        );
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("p99 &lt;mixed&gt;") && svg.contains("a&amp;b"));
        // 3 bars + 2 legend swatches + the background.
        assert_eq!(svg.matches("<rect").count(), 6);
    }

    #[test]
    fn line_chart_uses_a_log_axis() {
        let svg = line_chart(
            "latency",
            "p99 ms",
            &[Line {
                label: "x".into(),
                points: vec![(0.0, 12.0), (1.0, 1600.0)],
            }],
            &[(1.0, "mixed".into())],
        );
        for tick in [">10<", ">100<", ">1000<", ">10000<"] {
            assert!(svg.contains(tick), "missing tick {tick}");
        }
        assert_eq!(svg.matches("<polyline").count(), 1);
    }
}
